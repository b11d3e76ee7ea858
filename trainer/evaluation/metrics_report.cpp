#include <ctrainer/trainer/evaluation/metrics_report.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/json_file.h>

namespace ctrainer {

nlohmann::json metrics_to_json(const Metrics& metrics) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : metrics) out[k] = v;
  return out;
}

std::string format_metrics_block(const std::string& split, const Metrics& metrics) {
  size_t width = 0;
  for (const auto& [k, v] : metrics) width = std::max(width, k.size());
  std::string out = fmt::format("***** {} metrics *****\n", split);
  for (const auto& [k, v] : metrics) out += fmt::format("  {:<{}} = {:.6g}\n", k, width, v);
  return out;
}

void save_metrics(const std::string& output_dir, const std::string& split, const Metrics& metrics) {
  std::filesystem::create_directories(output_dir);
  const nlohmann::json values = metrics_to_json(metrics);
  write_json_file(std::filesystem::path(output_dir) / (split + "_results.json"), values, 4);
  const auto all_path = std::filesystem::path(output_dir) / "all_results.json";
  nlohmann::json all = nlohmann::json::object();
  if (std::ifstream in(all_path); in) {
    all = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!all.is_object()) all = nlohmann::json::object();
  }
  all.update(values);
  write_json_file(all_path, all, 4);
}

}  // namespace ctrainer
