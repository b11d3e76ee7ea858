#include "bench_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "results_readme.h"

namespace ctrainer::bench {
namespace {

namespace fs = std::filesystem;

bool needs_quotes(const std::string& arg) {
  if (arg.empty()) return true;
  return arg.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
             "_-+=./,:@%") != std::string::npos;
}

}  // namespace

std::string join_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    if (!needs_quotes(arg)) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::vector<std::string> split_command(const std::string& command) {
  std::vector<std::string> args;
  std::string current;
  bool in_word = false;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) args.push_back(current);
      current.clear();
      in_word = false;
    } else if (c == '\'' || c == '"') {
      const auto close = command.find(c, i + 1);
      if (close == std::string::npos)
        throw std::invalid_argument("unterminated " + std::string(1, c) + " quote in: " + command);
      current += command.substr(i + 1, close - i - 1);
      in_word = true;
      i = close;
    } else if (c == '\\' && i + 1 < command.size()) {
      current += command[++i];
      in_word = true;
    } else {
      current += c;
      in_word = true;
    }
  }
  if (in_word) args.push_back(current);
  return args;
}

int report_command(const std::vector<std::string>& args) {
  fs::path dir = "benchmarks/results";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--results") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "error: ctrainer-bench report: --results needs a folder\n");
        return 2;
      }
      dir = args[++i];
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::printf(
          "usage: ctrainer-bench report [--results DIR]\n"
          "  rewrites DIR/README.md (default benchmarks/results) from every DIR/*.json: the text\n"
          "  between <!-- generated:begin NAME --> and <!-- generated:end NAME --> is replaced,\n"
          "  results without a section get one appended, all other text is kept.\n");
      return 0;
    } else {
      std::fprintf(stderr,
                   "error: ctrainer-bench report: unexpected argument '%s' (usage: "
                   "ctrainer-bench report [--results DIR])\n",
                   args[i].c_str());
      return 2;
    }
  }
  try {
    const ReadmeUpdate update = write_results_readme(dir);
    const auto join = [](const std::vector<std::string>& names) {
      std::string out;
      for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
      return out.empty() ? std::string("none") : out;
    };
    std::printf("report: %s: %zu section(s) regenerated (%s), %zu appended (%s)\n",
                (dir / "README.md").string().c_str(), update.replaced.size(),
                join(update.replaced).c_str(), update.appended.size(),
                join(update.appended).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: ctrainer-bench report: %s\n", e.what());
    return 1;
  }
}

int rerun_command(const std::vector<std::string>& args, const std::vector<std::string>& scenarios,
                  const std::string& argv0) {
  if (args.size() != 1) {
    std::fprintf(stderr, "error: usage: ctrainer-bench rerun RESULT.json\n");
    return 2;
  }
  const fs::path file = args[0];
  std::vector<std::string> recorded;
  try {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read " + file.string());
    const auto result = nlohmann::json::parse(in);
    const std::string command = result.value("command", "");
    if (command.empty())
      throw std::runtime_error(file.string() +
                               " records no \"command\"; run the scenario by hand "
                               "with --json " +
                               file.string());
    recorded = split_command(command);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: ctrainer-bench rerun: %s\n", e.what());
    return 1;
  }
  if (recorded.size() < 2 ||
      std::find(scenarios.begin(), scenarios.end(), recorded[1]) == scenarios.end()) {
    std::fprintf(stderr,
                 "error: ctrainer-bench rerun: %s records '%s', whose scenario this "
                 "ctrainer-bench does not have (ctrainer-bench --help lists them)\n",
                 file.string().c_str(), recorded.size() > 1 ? recorded[1].c_str() : "");
    return 1;
  }
  // This binary, the recorded arguments; the outputs go where FILE is.
  recorded[0] = argv0;
  for (std::size_t i = 2; i + 1 < recorded.size(); ++i) {
    if (recorded[i] == "--json") recorded[i + 1] = file.string();
    if (recorded[i] == "--plots")
      recorded[i + 1] = file.parent_path().empty() ? std::string(".") : file.parent_path().string();
  }
  if (std::find(recorded.begin(), recorded.end(), "--json") == recorded.end()) {
    recorded.push_back("--json");
    recorded.push_back(file.string());
  }
  std::printf("rerun: %s\n", join_command(recorded).c_str());
  std::fflush(stdout);
  std::vector<char*> argv;
  for (auto& a : recorded) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "error: ctrainer-bench rerun: cannot execute /proc/self/exe: %s\n",
               std::strerror(errno));
  return 1;
}

}  // namespace ctrainer::bench
