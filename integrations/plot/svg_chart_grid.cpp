#include <ctrainer/integrations/plot/svg_chart_grid.h>

#include <algorithm>
#include <stdexcept>

#include <ctrainer/integrations/plot/svg_line_chart.h>

namespace ctrainer::plot {
namespace {

constexpr int kTitleHeight = 40;

/// The value of attribute `name` in the chart's <svg ...> start tag.
double root_attribute(const std::string& svg, const std::string& name) {
  const size_t root = svg.find("<svg ");
  const size_t end = root == std::string::npos ? root : svg.find('>', root);
  const std::string key = " " + name + "=\"";
  const size_t at = root == std::string::npos ? root : svg.find(key, root);
  if (at == std::string::npos || at > end)
    throw std::invalid_argument("svg_chart_grid: a chart has no <svg> root with a " + name);
  return std::stod(svg.substr(at + key.size()));
}

/// The chart from its <svg> root on (no XML declaration), placed at (x, y).
std::string placed(const std::string& svg, double x, double y) {
  const size_t root = svg.find("<svg ");
  return "<svg x=\"" + std::to_string(static_cast<int>(x)) + "\" y=\"" +
         std::to_string(static_cast<int>(y)) + "\"" + svg.substr(root + 4);
}

}  // namespace

std::string svg_chart_grid(const std::vector<std::string>& charts, int columns,
                           const std::string& title) {
  if (charts.empty()) throw std::invalid_argument("svg_chart_grid: no charts");
  if (columns < 1) throw std::invalid_argument("svg_chart_grid: columns must be >= 1");
  double cell_width = 0, cell_height = 0;
  for (const auto& chart : charts) {
    cell_width = std::max(cell_width, root_attribute(chart, "width"));
    cell_height = std::max(cell_height, root_attribute(chart, "height"));
  }
  const int used_columns = std::min<int>(columns, static_cast<int>(charts.size()));
  const int rows = (static_cast<int>(charts.size()) + columns - 1) / columns;
  const std::string width = std::to_string(static_cast<int>(cell_width * used_columns));
  const std::string height = std::to_string(static_cast<int>(cell_height * rows) + kTitleHeight);
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + width +
         "\" height=\"" + height + "\" viewBox=\"0 0 " + width + " " + height + "\">\n";
  svg += "<title>" + xml_escape(title) + "</title>\n";
  svg +=
      "<rect x=\"0\" y=\"0\" width=\"" + width + "\" height=\"" + height + "\" fill=\"white\"/>\n";
  svg += "<text class=\"title\" x=\"" +
         std::to_string(static_cast<int>(cell_width * used_columns / 2)) +
         "\" y=\"28\" text-anchor=\"middle\" font-family=\"DejaVu Sans, Helvetica, Arial, "
         "sans-serif\" font-size=\"20\" font-weight=\"bold\" fill=\"#222222\">" +
         xml_escape(title) + "</text>\n";
  for (size_t i = 0; i < charts.size(); ++i) {
    const double x = cell_width * static_cast<double>(static_cast<int>(i) % columns);
    const double y =
        kTitleHeight + cell_height * static_cast<double>(static_cast<int>(i) / columns);
    svg += placed(charts[i], x, y);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace ctrainer::plot
