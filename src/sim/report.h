// Turns runs into files a person can read or look at: one JSON summary, CSV tables,
// and PNG plots rendered by gnuplot. Several runs of one scenario (one per transport)
// go side by side in each.
#pragma once

#include <string>
#include <vector>

#include "sim/results.h"
#include "sim/scenario.h"

namespace mroce::sim {

std::string to_json(const Scenario& scenario, const std::vector<RunResult>& runs);
void write_json(const std::string& path, const Scenario& scenario,
                const std::vector<RunResult>& runs);
// flows.csv, samples.csv, queues.csv, paths.csv, drops.csv, summary.csv.
void write_csv(const std::string& dir, const std::vector<RunResult>& runs);
// throughput.png, fct_cdf.png, queues_<transport>.png, paths_<transport>.png; the data
// and gnuplot scripts stay beside them. Throws std::runtime_error if gnuplot fails.
void write_plots(const std::string& dir, const Scenario& scenario,
                 const std::vector<RunResult>& runs);
// A few lines for the terminal.
std::string text_summary(const RunResult& run);

}  // namespace mroce::sim
