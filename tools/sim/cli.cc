#include "cli.h"

#include <unistd.h>

#include <cstdio>
#include <sstream>

#include <CLI/CLI.hpp>

#include "sim/errors.h"
#include "sim/report.h"
#include "sim/simulation.h"

namespace mroce::sim {

namespace {

int list_scenarios() {
  for (const auto& s : builtin_scenarios()) std::printf("%-18s %s\n", s.name, s.summary);
  return 0;
}

int list_transports(const TransportRegistry& transports) {
  if (transports.all().empty()) std::printf("(no transport is built into this binary)\n");
  for (const auto& t : transports.all()) {
    std::printf("%-8s %s%s\n", t.name.c_str(), t.description.c_str(),
                t.wants_pfc ? " [PFC on by default]" : "");
  }
  return 0;
}

int show_scenario(const std::string& name) {
  const NamedScenario* s = find_builtin(name);
  if (!s) throw ConfigError("no named scenario '" + name + "' (see 'mroce-sim list')");
  std::fputs(s->toml, stdout);
  return 0;
}

struct RunArgs {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string transport;
  std::string json;
  std::string csv;
  std::string plot;
  bool quiet = false;
  bool progress = false;
  bool no_progress = false;
};

int run(RunArgs a, const TransportRegistry& transports, Ranks* ranks) {
  if (ranks && ranks->rank() != 0) {  // the first rank reports
    a.quiet = true;
    a.no_progress = true;
    a.progress = false;
    a.json.clear();
    a.csv.clear();
    a.plot.clear();
  }
  Scenario s = load_scenario(a.scenario, a.overrides);
  std::vector<std::string> names;
  const std::string choice = a.transport.empty() ? s.transport : a.transport;
  // A comma-separated list; "both" stands for mroce,roce.
  std::stringstream list(choice);
  for (std::string name; std::getline(list, name, ',');) {
    if (name == "both") {
      names.insert(names.end(), {"mroce", "roce"});
    } else if (!name.empty()) {
      names.push_back(name);
    }
  }
  if (names.empty()) throw ConfigError("--transport: no transport named");
  std::vector<const TransportInfo*> infos;
  for (const auto& n : names) {
    const TransportInfo* t = transports.find(n);
    if (!t) {
      throw ConfigError("transport '" + n +
                        "' is not built into this binary (available: " + transports.names() + ")");
    }
    infos.push_back(t);
  }
  RunOptions options;
  options.progress = a.progress || (!a.no_progress && isatty(STDERR_FILENO));
  std::vector<RunResult> results;
  bool complete = true;
  for (const TransportInfo* t : infos) {
    Simulation sim(scenario_for(s, t->name), *t, ranks);
    results.push_back(sim.run(options));
    complete &= results.back().complete;
    if (!a.quiet) std::fputs(text_summary(results.back()).c_str(), stdout);
  }
  if (!a.json.empty()) write_json(a.json, s, results);
  if (!a.csv.empty()) write_csv(a.csv, results);
  if (!a.plot.empty()) write_plots(a.plot, s, results);
  if (!complete && (!ranks || ranks->rank() == 0)) {
    std::fprintf(stderr, "mroce-sim: some flows did not complete (stop time reached or stalled)\n");
  }
  return 0;
}

}  // namespace

Scenario scenario_for(const Scenario& s, const std::string& transport) {
  Scenario out = s;
  if (transport == "roce" && s.network.topology.planes > 1) {
    for (WorkloadSpec& w : out.workloads) w.per_plane = true;
  }
  return out;
}

int run_cli(int argc, const char* const* argv, const TransportRegistry& transports, Ranks* ranks) {
  CLI::App app{"mroce-sim: packet-level simulator for MetaRoCE and RoCEv2 fabrics"};
  app.require_subcommand(1);
  auto* list = app.add_subcommand("list", "Show the named scenarios");
  auto* show = app.add_subcommand("show", "Print a named scenario's TOML");
  std::string show_name;
  show->add_option("name", show_name, "Scenario name")->required();
  auto* tr = app.add_subcommand("transports", "Show the transports built into this binary");
  auto* run_cmd = app.add_subcommand("run", "Run a scenario (a name from 'list' or a TOML file)");
  RunArgs a;
  run_cmd->add_option("scenario", a.scenario, "Scenario name or file")->required();
  run_cmd->add_option("--set", a.overrides, "Override a setting: key.path=value (repeatable)")
      ->take_all();
  run_cmd->add_option(
      "--transport", a.transport,
      "Transports to run, comma-separated names from 'transports'; both = mroce,roce");
  run_cmd->add_option("--json", a.json, "Write the summary as JSON to FILE (- for stdout)");
  run_cmd->add_option("--csv", a.csv, "Write CSV tables into DIR");
  run_cmd->add_option("--plot", a.plot, "Render PNG plots with gnuplot into DIR");
  run_cmd->add_flag("--quiet,-q", a.quiet, "Do not print the summary");
  run_cmd->add_flag("--progress", a.progress, "Always show the progress line");
  run_cmd->add_flag("--no-progress", a.no_progress, "Never show the progress line");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*list) return list_scenarios();
    if (*show) return show_scenario(show_name);
    if (*tr) return list_transports(transports);
    return run(a, transports, ranks);
  } catch (const ConfigError& e) {
    // Every rank reads the same input: the first one says what is wrong with it.
    if (!ranks || ranks->rank() == 0) std::fprintf(stderr, "mroce-sim: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    if (ranks && ranks->size() > 1) {
      std::fprintf(stderr, "mroce-sim: rank %u failed: %s\n", ranks->rank(), e.what());
    } else {
      std::fprintf(stderr, "mroce-sim: failed: %s\n", e.what());
    }
    return 1;
  }
}

}  // namespace mroce::sim
