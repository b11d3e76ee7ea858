// ctrainer-plot: the training curves of one run or several overlaid (loss, learning rate,
// gradient norm, eval metrics against the optimizer step), from their trainer_state.json, as
// one standalone SVG.
//
//   ctrainer-plot out_mrpc                        -> out_mrpc/training_curves.svg
//   ctrainer-plot run_a run_b --output cmp.svg    -> both runs in every panel
//
// Look at it in a browser, or as PNG: rsvg-convert -o curves.png out_mrpc/training_curves.svg
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/plot/training_curves.h>

namespace {

constexpr const char* kUsage =
    "usage: ctrainer-plot RUN [RUN...] [--output FILE]\n"
    "  RUN      a run's output_dir or checkpoint folder (its trainer_state.json), or the file\n"
    "  --output the SVG to write (default: RUN/training_curves.svg for one run,\n"
    "           training_curves.svg in the current folder for several)\n";

int plot(const std::vector<std::string>& arguments) {
  std::vector<std::string> runs;
  std::string output;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const std::string& argument = arguments[i];
    if (argument == "-h" || argument == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (argument == "--output" || argument == "-o") {
      if (i + 1 == arguments.size()) throw ctrainer::ArgumentError("--output needs a file name");
      output = arguments[++i];
    } else if (argument.rfind("--output=", 0) == 0) {
      output = argument.substr(9);
    } else if (argument.rfind("-", 0) == 0) {
      throw ctrainer::ArgumentError("unknown flag " + argument + "\n" + kUsage);
    } else {
      runs.push_back(argument);
    }
  }
  if (runs.empty()) throw ctrainer::ArgumentError(std::string("no run given\n") + kUsage);
  std::vector<ctrainer::RunHistory> histories;
  for (const auto& run : runs) histories.push_back(ctrainer::read_run_history(run));
  if (output.empty()) {
    namespace fs = std::filesystem;
    output = runs.size() == 1
                 ? (fs::path(histories.front().path).parent_path() / "training_curves.svg").string()
                 : "training_curves.svg";
  }
  const std::string svg = ctrainer::training_curves_svg(histories);
  std::ofstream out(output, std::ios::binary);
  out << svg;
  out.flush();
  if (!out)
    throw ctrainer::ArgumentError("cannot write " + output +
                                  ": check the folder exists and is writable");
  std::printf("ctrainer-plot: wrote %s\n", output.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return plot(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const ctrainer::ArgumentError& error) {
    std::fprintf(stderr, "ctrainer-plot: error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ctrainer-plot: error: %s\n", error.what());
    return 1;
  }
}
