#pragma once
/// \file The training curves of one run or several overlaid, drawn from the log_history of their
/// trainer_state.json (the file every run, and every checkpoint, writes): training loss, learning
/// rate, gradient norm, and each evaluation metric, one panel each, against the optimizer step,
/// in one standalone SVG (ctrainer-plot, run_glue --plot). Panels without data are left out.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer {

/// One run's logged history.
struct RunHistory {
  std::string label;           ///< the legend's name: the run folder's name (its path if ambiguous)
  std::string path;            ///< the trainer_state.json read
  nlohmann::json log_history;  ///< its "log_history" array
};

/// Reads `run` (an output_dir or checkpoint folder holding trainer_state.json, or the file
/// itself). Throws ArgumentError naming the file when it is missing, not JSON, or has no
/// log_history list.
RunHistory read_run_history(const std::string& run);

/// The panels drawn for `runs`, in order: "loss", "learning_rate", "grad_norm", then every
/// eval_<metric> logged (eval_loss first; runtimes and throughputs left out).
std::vector<std::string> training_curve_keys(const std::vector<RunHistory>& runs);

/// The curves of `runs` as one SVG document (one series per run in every panel); runs keep
/// their order and get unique legend names. Throws ArgumentError when no run logged anything
/// to draw.
std::string training_curves_svg(std::vector<RunHistory> runs);

}  // namespace ctrainer
