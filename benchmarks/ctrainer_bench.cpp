// ctrainer-bench <scenario> [--json PATH] [--rounds N] [--quick] [--plots DIR] [scenario flags]
// Runs one benchmark scenario, prints its table and writes {"scenario","config","metrics",
// "table","command","environment"}. `ctrainer-bench report` and `rerun`: bench_commands.h.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench_commands.h"
#include "bench_environment.h"
#include "bench_report.h"

namespace ctrainer::bench {
Scenario trainer_overhead_scenario();
Scenario scaling_scenario();
Scenario checkpoint_io_scenario();
Scenario precision_scenario();
Scenario gradient_checkpointing_scenario();
Scenario tokenizer_scenario();
Scenario tokenizer_json_scenario();
Scenario dataloader_scenario();
Scenario ddp_scenario();
Scenario sharding_scenario();
Scenario vs_hf_scenario();
Scenario clm_vs_hf_scenario();
Scenario generate_vs_hf_scenario();
Scenario seq2seq_vs_hf_scenario();
Scenario linear_kernel_scenario();
Scenario attention_kernel_scenario();
}  // namespace ctrainer::bench

namespace {

using ctrainer::bench::Scenario;

std::vector<Scenario> all_scenarios() {
  return {ctrainer::bench::trainer_overhead_scenario(),
          ctrainer::bench::scaling_scenario(),
          ctrainer::bench::checkpoint_io_scenario(),
          ctrainer::bench::gradient_checkpointing_scenario(),
          ctrainer::bench::tokenizer_scenario(),
          ctrainer::bench::tokenizer_json_scenario(),
          ctrainer::bench::dataloader_scenario(),
          ctrainer::bench::precision_scenario(),
          ctrainer::bench::ddp_scenario(),
          ctrainer::bench::sharding_scenario(),
          ctrainer::bench::vs_hf_scenario(),
          ctrainer::bench::clm_vs_hf_scenario(),
          ctrainer::bench::generate_vs_hf_scenario(),
          ctrainer::bench::seq2seq_vs_hf_scenario(),
          ctrainer::bench::linear_kernel_scenario(),
          ctrainer::bench::attention_kernel_scenario()};
}

/// The scenario flag called `name`, searched in every scenario: whether it takes a value must
/// be known before the scenario is (the scenario's name may come after its flags).
const ctrainer::bench::ScenarioFlag* find_scenario_flag(const std::vector<Scenario>& scenarios,
                                                        const std::string& name) {
  for (const auto& s : scenarios)
    for (const auto& flag : s.flags)
      if (flag.name == name) return &flag;
  return nullptr;
}

int usage(const std::string& error) {
  std::FILE* out = error.empty() ? stdout : stderr;
  if (!error.empty()) std::fprintf(out, "error: %s\n", error.c_str());
  std::fprintf(
      out,
      "usage: ctrainer-bench <scenario> [--json PATH] [--rounds N] [--quick] [--plots DIR] "
      "[scenario flags]\n"
      "       ctrainer-bench report [--results DIR]   results/README.md from the JSONs\n"
      "       ctrainer-bench rerun RESULT.json        re-run a result's recorded command\n"
      "  --json PATH  also write the result as JSON to PATH\n"
      "  --rounds N   measured rounds per configuration (default 7 unless the scenario says)\n"
      "  --quick      tiny sizes (a smoke test of the harness, not a measurement)\n"
      "  --plots DIR  write the scenario's SVG charts (if it draws any) into DIR\n"
      "  a scenario's own flags are listed, indented, under its name\n"
      "scenarios:\n");
  for (const auto& s : all_scenarios()) {
    std::fprintf(out, "  %-18s %s\n", s.name.c_str(), s.description.c_str());
    for (const auto& flag : s.flags) {
      const std::string spelled =
          "--" + flag.name + (flag.value_name.empty() ? "" : " ") + flag.value_name;
      // A long spelling gets its own line, so that the help texts stay aligned.
      if (spelled.size() > 24)
        std::fprintf(out, "      %s\n      %-24s %s\n", spelled.c_str(), "", flag.help.c_str());
      else
        std::fprintf(out, "      %-24s %s\n", spelled.c_str(), flag.help.c_str());
    }
  }
  return error.empty() ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> all_args(argv, argv + argc);
  if (argc > 1 && all_args[1] == "report")
    return ctrainer::bench::report_command({all_args.begin() + 2, all_args.end()});
  if (argc > 1 && all_args[1] == "rerun") {
    std::vector<std::string> names;
    for (const auto& s : all_scenarios()) names.push_back(s.name);
    return ctrainer::bench::rerun_command({all_args.begin() + 2, all_args.end()}, names, argv[0]);
  }
  std::string scenario_name, json_path;
  ctrainer::bench::BenchOptions options;
  const auto scenarios = all_scenarios();
  std::vector<std::string> scenario_flags;  // in order, checked once the scenario is known
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return usage("");
    if (arg == "--json" || arg == "--rounds" || arg == "--plots") {
      if (i + 1 >= argc) return usage(arg + " needs a value");
      const std::string value = argv[++i];
      if (arg == "--json") {
        json_path = value;
      } else if (arg == "--plots") {
        options.plots_dir = value;
      } else {
        try {
          options.rounds = std::stoll(value);
        } catch (const std::exception&) {
          return usage("--rounds expects a positive integer, got '" + value + "'");
        }
        if (options.rounds < 1)
          return usage("--rounds expects a positive integer, got '" + value + "'");
        options.rounds_given = true;
      }
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg.rfind("--", 0) == 0) {
      // A scenario's own flag: --name VALUE, --name=VALUE, or a bare --name.
      const auto equals = arg.find('=');
      const std::string name = arg.substr(2, equals == std::string::npos ? arg.npos : equals - 2);
      const auto* flag = find_scenario_flag(scenarios, name);
      if (flag == nullptr) return usage("unknown flag --" + name);
      std::string value = "true";
      if (equals != std::string::npos) {
        if (flag->value_name.empty()) return usage("--" + name + " takes no value");
        value = arg.substr(equals + 1);
      } else if (!flag->value_name.empty()) {
        if (i + 1 >= argc) return usage("--" + name + " needs a value (" + flag->value_name + ")");
        value = argv[++i];
      }
      options.flags[name] = value;
      scenario_flags.push_back(name);
    } else if (scenario_name.empty()) {
      scenario_name = arg;
    } else {
      return usage("only one scenario at a time (got '" + scenario_name + "' and '" + arg + "')");
    }
  }
  if (scenario_name.empty()) return usage("no scenario given");
  const auto& known = scenarios;
  if (std::none_of(known.begin(), known.end(),
                   [&](const Scenario& s) { return s.name == scenario_name; }))
    return usage("unknown scenario '" + scenario_name + "'");
  // Bad output paths are reported now, not after a run of many minutes.
  // (--plots first: --json may name a file in that folder.)
  if (!options.plots_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.plots_dir, error);
    if (error)
      return usage("--plots " + options.plots_dir + ": cannot create the folder (" +
                   error.message() + ")");
  }
  if (const auto parent = std::filesystem::path(json_path).parent_path();
      !json_path.empty() && !parent.empty() && !std::filesystem::is_directory(parent))
    return usage("--json " + json_path + ": the folder " + parent.string() + " does not exist");
  for (const auto& scenario : known) {
    if (scenario.name != scenario_name) continue;
    for (const auto& name : scenario_flags) {
      bool declared = false;
      for (const auto& flag : scenario.flags) declared = declared || flag.name == name;
      if (!declared) return usage("--" + name + " is not a flag of scenario " + scenario_name);
    }
    ctrainer::bench::BenchResult result;
    try {
      result = scenario.run(options);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "ctrainer-bench %s: error: %s\n", scenario_name.c_str(), error.what());
      return 1;
    }
    result.command = ctrainer::bench::join_command(all_args);
    result.environment = ctrainer::bench::collect_environment();
    std::fputs(result.table().c_str(), stdout);
    const std::string json = result.to_json().dump(2);
    if (!json_path.empty()) {
      std::ofstream out(json_path);
      if (!out) {
        std::fprintf(stderr, "error: cannot write --json %s (does its folder exist?)\n",
                     json_path.c_str());
        return 1;
      }
      out << json << '\n';
    }
    std::printf("%s\n", json.c_str());
    return 0;
  }
  return usage("unknown scenario '" + scenario_name + "'");
}
