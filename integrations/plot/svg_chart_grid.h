#pragma once
/// \file Several charts in one standalone SVG 1.1 document: a title over a grid of panels, each
/// panel a chart's own <svg> element placed with x/y (nested SVG viewports), so every chart keeps
/// its axes, ticks and legend. ctrainer-plot draws a run's curves this way.
#include <string>
#include <vector>

namespace ctrainer::plot {

/// `charts` (each a document from SvgLineChart::to_svg()) in rows of `columns`, under `title`.
/// Each grid cell is as wide as the widest chart and as tall as the tallest. Throws
/// std::invalid_argument when `charts` is empty, `columns` < 1, or a chart has no <svg> root with
/// width and height.
std::string svg_chart_grid(const std::vector<std::string>& charts, int columns,
                           const std::string& title);

}  // namespace ctrainer::plot
