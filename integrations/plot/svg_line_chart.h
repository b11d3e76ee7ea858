#pragma once
/// \file A line chart written as a standalone SVG 1.1 document: a title, axis labels, a linear or
/// logarithmic x axis, several named series of (x, y) points, a legend and "nice" tick values.
/// Shared by ctrainer-bench's plots and plotting tools for training curves (trainer_log.jsonl).
/// No torch and no third-party headers, so that it compiles in a moment and has no dependencies
/// beyond the standard library.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ctrainer::plot {

/// One data point. Points whose x or y is not finite (NaN, inf: a diverged loss) are skipped.
struct Point {
  double x = 0;
  double y = 0;
};

/// A named line of points, drawn in the order given (sort by x first for a sweep).
struct Series {
  std::string name;
  std::vector<Point> points;
};

/// Tick values for a linear axis covering [lo, hi]: multiples of 1, 2 or 5 × 10^k, about
/// `target_count` of them, the first <= lo and the last >= hi (so the axis ends on a tick).
/// lo == hi gives ±10% around the value (−0.5..0.5 around 0). Throws std::invalid_argument on
/// non-finite bounds or target_count < 2.
std::vector<double> nice_ticks(double lo, double hi, int target_count = 5);

/// Tick values for a logarithmic axis covering [lo, hi] (both > 0), all inside it: powers of ten
/// when the range spans 3 decades or more, 1-2-5 multiples of them otherwise, and nice linear
/// ticks inside the range when that leaves fewer than two. Throws std::invalid_argument when
/// lo <= 0 or hi < lo.
std::vector<double> log_ticks(double lo, double hi);

/// Tick labels for `ticks` with one shared number of decimals (the fewest that tell adjacent
/// ticks apart, trailing zeros kept alike: "0.0", "0.5", "1.0"); %g notation for very large or
/// very small magnitudes.
std::vector<std::string> tick_labels(const std::vector<double>& ticks);

/// `text` with the five XML special characters (& < > " ') replaced by entities, so it can be
/// used in element content and in attribute values.
std::string xml_escape(std::string_view text);

/// A line chart. Configure it with the fluent setters, add series, then to_svg() or write().
///
///   SvgLineChart chart("Throughput");
///   chart.x_label("batch size").y_label("samples/s").x_log_scale();
///   chart.add_series("1 process", {{4, 80}, {8, 120}, {16, 150}});
///   chart.write("throughput.svg");
class SvgLineChart {
 public:
  explicit SvgLineChart(std::string title = "");

  SvgLineChart& title(std::string text);
  /// A smaller second line under the title (the run, the model, the settings).
  SvgLineChart& subtitle(std::string text);
  SvgLineChart& x_label(std::string text);
  SvgLineChart& y_label(std::string text);
  /// A logarithmic x axis (every x must then be > 0; to_svg() throws naming the series if not).
  SvgLineChart& x_log_scale(bool on = true);
  /// Whether the y axis starts at 0 when every y is positive (default true: a throughput read
  /// against 0 is not exaggerated); off, it spans the data only.
  SvgLineChart& y_include_zero(bool on);
  /// Explicit x tick values (e.g. the swept sizes 4, 8, 16, ...) instead of computed ones; the
  /// x axis then spans the data and these ticks.
  SvgLineChart& x_ticks(std::vector<double> ticks);
  /// Size in SVG user units (pixels) without the legend, at least 240 × 160; the legend, right
  /// of the plot, widens the canvas by what its longest name needs.
  SvgLineChart& size(int width, int height);
  /// Adds a series; the legend lists series in the order added.
  SvgLineChart& add_series(std::string name, std::vector<Point> points);

  const std::vector<Series>& series() const { return series_; }

  /// The whole chart as a standalone SVG 1.1 document. Throws std::invalid_argument when a
  /// series has an x <= 0 on a logarithmic axis.
  std::string to_svg() const;
  /// Writes to_svg() to `path`; throws std::runtime_error naming the path when it cannot.
  void write(const std::string& path) const;

  /// Where data coordinates land on the canvas (after to_svg()'s axis ranges are fixed by the
  /// series added so far): x grows to the right, y grows downwards as in SVG. On a logarithmic
  /// axis x_pixel(x) = left + (log x − log x_min) / (log x_max − log x_min) · plot width.
  double x_pixel(double x) const;
  double y_pixel(double y) const;

  /// The plot area (inside the axes) in canvas units.
  struct Area {
    double left, top, width, height;
  };
  Area plot_area() const;
  /// Axis ranges and ticks as to_svg() draws them.
  struct Axes {
    double x_min, x_max, y_min, y_max;
    std::vector<double> x_ticks, y_ticks;
  };
  Axes axes() const;

 private:
  std::string title_, subtitle_, x_label_, y_label_;
  bool x_log_ = false;
  bool y_include_zero_ = true;
  std::vector<double> x_ticks_;
  int width_ = 720, height_ = 440;
  std::vector<Series> series_;
};

}  // namespace ctrainer::plot
