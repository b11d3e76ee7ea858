#pragma once
/// \file Reporting final metrics as HF's Trainer.log_metrics / save_metrics do.
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/trainer/callbacks/trainer_callback.h>

namespace ctrainer {

/// Metrics as a JSON object (for Trainer::log and result files).
nlohmann::json metrics_to_json(const Metrics& metrics);

/// The "***** train metrics *****" block: one aligned "  key = value" line per metric.
std::string format_metrics_block(const std::string& split, const Metrics& metrics);

/// Writes output_dir/<split>_results.json and merges the metrics into output_dir/all_results.json.
void save_metrics(const std::string& output_dir, const std::string& split, const Metrics& metrics);

}  // namespace ctrainer
