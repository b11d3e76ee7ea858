#pragma once
// What a benchmark scenario produces, and how it is printed and saved.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer::bench {

/// Options common to all scenarios (from the ctrainer-bench command line).
struct BenchOptions {
  int64_t rounds = 7;         ///< measured rounds per configuration (after one warm-up)
  bool rounds_given = false;  ///< --rounds was on the command line (else: the default above)
  bool quick = false;         ///< tiny sizes, for smoke tests of the harness
  /// Where scenarios that draw charts write their SVG files ("": no charts).
  std::string plots_dir;
  /// The scenario's own flags (Scenario::flags) that were given: name without "--" -> value
  /// ("true" for a bare flag that takes no value).
  std::map<std::string, std::string> flags;
};

/// A flag that only one scenario accepts (vs_hf's --workloads, --device, ...).
struct ScenarioFlag {
  std::string name;        ///< without "--"
  std::string value_name;  ///< shown in the usage, e.g. "LIST"; empty: a bare flag
  std::string help;
};

/// One row of the printed table.
struct TableRow {
  std::vector<std::string> cells;
};

/// The result of a scenario: {"scenario", "config", "metrics"} plus a readable table, and what
/// ctrainer-bench adds to make it reproducible: the command line and the machine it ran on.
struct BenchResult {
  std::string scenario;
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json metrics = nlohmann::json::object();
  std::vector<std::string> header;
  std::vector<TableRow> rows;
  /// The ctrainer-bench command line that produced the result (set by ctrainer-bench's main).
  std::string command;
  /// Date, CPU, threads, torch and BLAS of the run (collect_environment(), set by main).
  nlohmann::json environment = nlohmann::json::object();
  /// File names of the SVG charts the scenario wrote into BenchOptions::plots_dir.
  std::vector<std::string> plots;

  /// {"scenario", "config", "metrics", "table": {"header", "rows"}, "command", "environment"},
  /// plus "plots" when there are any.
  nlohmann::json to_json() const;
  std::string table() const;
};

/// A named scenario.
struct Scenario {
  std::string name;
  std::string description;
  std::function<BenchResult(const BenchOptions&)> run;
  std::vector<ScenarioFlag> flags = {};  ///< flags of this scenario only
};

/// Median of the values (they are copied and sorted).
double median(std::vector<double> values);

}  // namespace ctrainer::bench
