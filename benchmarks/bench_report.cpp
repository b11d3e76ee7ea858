#include "bench_report.h"

#include <algorithm>

#include <fmt/format.h>

namespace ctrainer::bench {

nlohmann::json BenchResult::to_json() const {
  nlohmann::json table_rows = nlohmann::json::array();
  for (const auto& r : rows) table_rows.push_back(r.cells);
  nlohmann::json out = {
      {"scenario", scenario}, {"config", config},
      {"metrics", metrics},   {"table", {{"header", header}, {"rows", table_rows}}},
      {"command", command},   {"environment", environment}};
  if (!plots.empty()) out["plots"] = plots;
  return out;
}

std::string BenchResult::table() const {
  std::vector<size_t> width(header.size(), 0);
  auto widen = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], cells[i].size());
  };
  widen(header);
  for (const auto& r : rows) widen(r.cells);
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (size_t i = 0; i < width.size(); ++i)
      out += fmt::format(" {:<{}} |", i < cells.size() ? cells[i] : "", width[i]);
    return out + "\n";
  };
  std::string out = line(header) + "|";
  for (size_t w : width) out += std::string(w + 2, '-') + "|";
  out += "\n";
  for (const auto& r : rows) out += line(r.cells);
  return out;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace ctrainer::bench
