// mroce-perf's output: a perftest-like table on stdout, the transport's counters, and
// the same as JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "options.h"

namespace mroce::perf {

struct BandwidthResult {
  std::uint32_t size = 0;
  std::uint64_t messages = 0;
  double seconds = 0;
  double gbps = 0;
  double peak_gbps = 0;
  double mpps = 0;
  std::vector<std::pair<double, double>> series;  // (seconds since start, Gbit/s)
  double start_unix = 0;  // wall-clock start, to line the series up with outside events
};

struct LatencyResult {
  std::uint32_t size = 0;
  std::uint64_t iterations = 0;
  double min_us = 0, max_us = 0, median_us = 0, avg_us = 0, stdev_us = 0, p99_us = 0, p999_us = 0;
};

// Latency statistics of samples (microseconds); sorts them.
LatencyResult summarize(std::uint32_t size, std::vector<double>& samples);

void print_header(const Options& options, const std::string& peer);
void print_bandwidth(const BandwidthResult& r);
void print_latency(const LatencyResult& r);
void print_footer();
// The counters that explain what the transport did, ours and the server's.
void print_counters(const nlohmann::json& client, const nlohmann::json& server);

nlohmann::json to_json(const BandwidthResult& r);
nlohmann::json to_json(const LatencyResult& r);

}  // namespace mroce::perf
