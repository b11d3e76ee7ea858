#include <ctrainer/trainer/plot/training_curves.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/plot/svg_chart_grid.h>
#include <ctrainer/integrations/plot/svg_line_chart.h>

namespace ctrainer {
namespace {

namespace fs = std::filesystem;

/// Evaluation entries also log how long they took; those are not curves of the model.
bool is_metric_key(const std::string& key) {
  if (key.rfind("eval_", 0) != 0) return false;
  for (const char* suffix : {"_runtime", "_samples_per_second", "_steps_per_second"})
    if (key.size() >= std::string(suffix).size() &&
        key.compare(key.size() - std::string(suffix).size(), std::string::npos, suffix) == 0)
      return false;
  return true;
}

/// The y axis label, with the unit: HF's losses are mean cross-entropies in nats (a mean squared
/// error for regression tasks); metrics are fractions or correlation coefficients.
std::string y_label(const std::string& key) {
  if (key == "loss") return "training loss (nats; MSE for regression)";
  if (key == "eval_loss") return "eval loss (nats; MSE for regression)";
  if (key == "learning_rate") return "learning rate (per step)";
  if (key == "grad_norm") return "gradient L2 norm (before clipping)";
  return key.substr(5) + " (score, 1 = best)";
}

std::string title(const std::string& key) {
  if (key == "loss") return "Training loss";
  if (key == "learning_rate") return "Learning rate";
  if (key == "grad_norm") return "Gradient norm";
  return "Evaluation: " + key.substr(5);
}

std::vector<plot::Point> points_of(const nlohmann::json& history, const std::string& key) {
  std::vector<plot::Point> points;
  for (const auto& entry : history) {
    if (!entry.is_object() || !entry.contains(key) || !entry.contains("step")) continue;
    if (!entry[key].is_number() || !entry["step"].is_number()) continue;
    points.push_back({entry["step"].get<double>(), entry[key].get<double>()});
  }
  return points;
}

/// Legend names: folder names, or the paths where two runs share a folder name.
void make_labels_unique(std::vector<RunHistory>& runs) {
  std::set<std::string> seen, repeated;
  for (const auto& run : runs)
    if (!seen.insert(run.label).second) repeated.insert(run.label);
  for (auto& run : runs)
    if (repeated.count(run.label)) run.label = fs::path(run.path).parent_path().string();
}

}  // namespace

RunHistory read_run_history(const std::string& run) {
  const fs::path given(run);
  std::error_code ec;
  const fs::path file = fs::is_directory(given, ec) ? given / "trainer_state.json" : given;
  std::ifstream in(file);
  if (!in)
    throw ArgumentError(file.string() +
                        ": no such file; give a run's output_dir (or a checkpoint folder): "
                        "the Trainer writes trainer_state.json there");
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ArgumentError(file.string() + " is not valid JSON: " + e.what());
  }
  if (!state.is_object() || !state.contains("log_history") || !state["log_history"].is_array())
    throw ArgumentError(file.string() +
                        " has no \"log_history\" list: is it a trainer_state.json?");
  fs::path folder = fs::absolute(file, ec).parent_path();
  return {folder.filename().string(), file.string(), state["log_history"]};
}

std::vector<std::string> training_curve_keys(const std::vector<RunHistory>& runs) {
  std::vector<std::string> keys;
  for (const char* key : {"loss", "learning_rate", "grad_norm", "eval_loss"})
    for (const auto& run : runs)
      if (!points_of(run.log_history, key).empty()) {
        keys.emplace_back(key);
        break;
      }
  std::set<std::string> metrics;
  for (const auto& run : runs)
    for (const auto& entry : run.log_history)
      if (entry.is_object())
        for (const auto& [key, value] : entry.items())
          if (is_metric_key(key) && key != "eval_loss" && value.is_number()) metrics.insert(key);
  keys.insert(keys.end(), metrics.begin(), metrics.end());
  return keys;
}

std::string training_curves_svg(std::vector<RunHistory> runs) {
  make_labels_unique(runs);
  const std::vector<std::string> keys = training_curve_keys(runs);
  if (keys.empty())
    throw ArgumentError(
        "nothing to plot: the runs' log_history holds no loss, learning rate, "
        "gradient norm or eval metric (train with --logging_steps and --eval_strategy)");
  std::vector<std::string> charts;
  for (const auto& key : keys) {
    plot::SvgLineChart chart(title(key));
    chart.x_label("optimizer step").y_label(y_label(key)).size(560, 340);
    chart.y_include_zero(key == "learning_rate" || key == "grad_norm");
    // Every run in every panel (empty where it logged nothing): same colours, same legend.
    for (const auto& run : runs) chart.add_series(run.label, points_of(run.log_history, key));
    charts.push_back(chart.to_svg());
  }
  std::string names;
  for (const auto& run : runs) names += (names.empty() ? "" : ", ") + run.label;
  return plot::svg_chart_grid(charts, 2, "Training curves: " + names);
}

}  // namespace ctrainer
