#include "svg_line_chart.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace ctrainer::plot {
namespace {

// Layout in canvas units. The legend sits right of the plot area, so it never hides data.
constexpr double kMarginLeft = 76, kMarginTop = 44, kMarginBottom = 56, kMarginRight = 20;
constexpr double kSubtitleHeight = 18;
constexpr double kFontSize = 12, kTitleFontSize = 15;
constexpr double kCharWidth = 6.6;  // a generous average for 12-px sans-serif text
constexpr double kLegendSwatch = 22, kLegendGap = 8, kLegendRow = 18;
// Markers are drawn for sparse series (a sweep); a training curve of thousands of points gets
// the line only.
constexpr std::size_t kMaxMarkers = 60;
// Tableau 10: distinguishable colours, also in print.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr double kTolerance = 1e-9;

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  return buffer;
}

/// step = mantissa × 10^exponent with mantissa 1, 2 or 5; `i` × step computed so that decimal
/// ticks come out as the nearest doubles (0.6, not 0.6000000000000001).
double tick_value(long long i, double mantissa, int exponent) {
  const double scaled = static_cast<double>(i) * mantissa;
  return exponent >= 0 ? scaled * std::pow(10.0, exponent) : scaled / std::pow(10.0, -exponent);
}

bool finite(const Point& p) {
  return std::isfinite(p.x) && std::isfinite(p.y);
}

/// The legend's width: the canvas grows by it, so long series names never squeeze the plot.
double legend_width(const std::vector<Series>& series) {
  std::size_t longest = 0;
  for (const auto& s : series) longest = std::max(longest, s.name.size());
  if (series.empty()) return 0;
  const double wanted = kLegendSwatch + kLegendGap + kCharWidth * static_cast<double>(longest) + 16;
  return std::min(wanted, 600.0);
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target_count) {
  if (!std::isfinite(lo) || !std::isfinite(hi))
    throw std::invalid_argument("nice_ticks: the range must be finite");
  if (target_count < 2) throw std::invalid_argument("nice_ticks: target_count must be >= 2");
  if (hi < lo) std::swap(lo, hi);
  // Values read from files (a trainer_state.json's log_history) can span more than a double can
  // subtract (-1e308 to 1e308) or be one subnormal number: the ticks cover at most +-1e300, and
  // a single value gets a range of at least 1e-300 around it.
  constexpr double kLimit = 1e300;
  lo = std::clamp(lo, -kLimit, kLimit);
  hi = std::clamp(hi, -kLimit, kLimit);
  if (hi == lo) {
    const double half = lo == 0 ? 0.5 : std::max(std::abs(lo) * 0.1, 1 / kLimit);
    lo -= half;
    hi += half;
  }
  const double rough = (hi - lo) / (target_count - 1);
  const int exponent = static_cast<int>(std::floor(std::log10(rough)));
  const double residual = rough / std::pow(10.0, exponent);
  // Rounding to the nearest of 1, 2, 5, 10 (not up) keeps the count near the target.
  double mantissa = residual < 1.5 ? 1 : residual < 3 ? 2 : residual < 7 ? 5 : 10;
  const double step = tick_value(1, mantissa, exponent);
  const auto first = static_cast<long long>(std::floor(lo / step + kTolerance));
  const auto last = static_cast<long long>(std::ceil(hi / step - kTolerance));
  std::vector<double> ticks;
  for (long long i = first; i <= last; ++i) ticks.push_back(tick_value(i, mantissa, exponent));
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  if (!(lo > 0) || !std::isfinite(hi) || hi < lo)
    throw std::invalid_argument("log_ticks: needs 0 < lo <= hi");
  const auto inside = [&](double v) {
    return v >= lo * (1 - kTolerance) && v <= hi * (1 + kTolerance);
  };
  const int first_decade = static_cast<int>(std::floor(std::log10(lo)));
  const int last_decade = static_cast<int>(std::floor(std::log10(hi) + kTolerance));
  std::vector<double> ticks;
  const bool wide = std::log10(hi / lo) >= 3;
  for (int e = first_decade; e <= last_decade; ++e) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (wide && m != 1.0) continue;
      const double v = tick_value(1, m, e);
      if (inside(v)) ticks.push_back(v);
    }
  }
  if (ticks.size() >= 2) return ticks;
  // Less than a factor of ~2.5 between lo and hi: linear ticks read better there.
  ticks.clear();
  for (double v : nice_ticks(lo, hi, 4))
    if (v > 0 && inside(v)) ticks.push_back(v);
  return ticks;
}

std::vector<std::string> tick_labels(const std::vector<double>& input) {
  std::vector<double> ticks = input;
  std::vector<std::string> labels;
  double max_abs = 0, min_abs = std::numeric_limits<double>::infinity();
  double min_step = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    max_abs = std::max(max_abs, std::abs(ticks[i]));
    if (i > 0) min_step = std::min(min_step, std::abs(ticks[i] - ticks[i - 1]));
  }
  if (!std::isfinite(min_step)) min_step = max_abs > 0 ? max_abs : 1;
  // A tick that is zero up to rounding (0.1 + 0.2 - 0.3) is zero: it must not force %g.
  for (double& t : ticks) {
    if (std::abs(t) < kTolerance * std::max(min_step, max_abs)) t = 0;
    if (t != 0) min_abs = std::min(min_abs, std::abs(t));
  }
  const bool scientific =
      max_abs >= 1e6 || min_abs < 1e-3 || (std::isfinite(min_abs) && max_abs / min_abs >= 1e4);
  int decimals = 0;
  if (!scientific && min_step > 0)
    decimals = std::clamp(static_cast<int>(-std::floor(std::log10(min_step) + kTolerance)), 0, 6);
  for (double t : ticks) {
    char buffer[32];
    if (scientific)
      std::snprintf(buffer, sizeof buffer, "%g", t);
    else
      std::snprintf(buffer, sizeof buffer, "%.*f", decimals, t);
    std::string label = buffer;
    // A tiny negative value rounded to zero prints as "-0.0".
    if (label[0] == '-' && label.find_first_not_of("0.", 1) == std::string::npos) label.erase(0, 1);
    labels.push_back(label);
  }
  return labels;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

SvgLineChart::SvgLineChart(std::string title) : title_(std::move(title)) {}

SvgLineChart& SvgLineChart::title(std::string text) {
  title_ = std::move(text);
  return *this;
}
SvgLineChart& SvgLineChart::subtitle(std::string text) {
  subtitle_ = std::move(text);
  return *this;
}
SvgLineChart& SvgLineChart::x_label(std::string text) {
  x_label_ = std::move(text);
  return *this;
}
SvgLineChart& SvgLineChart::y_label(std::string text) {
  y_label_ = std::move(text);
  return *this;
}
SvgLineChart& SvgLineChart::x_log_scale(bool on) {
  x_log_ = on;
  return *this;
}
SvgLineChart& SvgLineChart::y_include_zero(bool on) {
  y_include_zero_ = on;
  return *this;
}
SvgLineChart& SvgLineChart::x_ticks(std::vector<double> ticks) {
  x_ticks_ = std::move(ticks);
  std::sort(x_ticks_.begin(), x_ticks_.end());
  return *this;
}
SvgLineChart& SvgLineChart::size(int width, int height) {
  width_ = std::max(width, 240);
  height_ = std::max(height, 160);
  return *this;
}
SvgLineChart& SvgLineChart::add_series(std::string name, std::vector<Point> points) {
  series_.push_back({std::move(name), std::move(points)});
  return *this;
}

SvgLineChart::Area SvgLineChart::plot_area() const {
  const double top = kMarginTop + (subtitle_.empty() ? 0 : kSubtitleHeight);
  return {kMarginLeft, top, width_ - kMarginLeft - kMarginRight, height_ - top - kMarginBottom};
}

SvgLineChart::Axes SvgLineChart::axes() const {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (const auto& s : series_) {
    for (const auto& p : s.points) {
      if (!finite(p)) continue;
      if (x_log_ && p.x <= 0)
        throw std::invalid_argument("SvgLineChart: series '" + s.name +
                                    "' has x = " + std::to_string(p.x) +
                                    " on a logarithmic x axis; only x > 0 can be drawn there");
      x_lo = std::min(x_lo, p.x);
      x_hi = std::max(x_hi, p.x);
      y_lo = std::min(y_lo, p.y);
      y_hi = std::max(y_hi, p.y);
    }
  }
  const bool empty = !std::isfinite(x_lo);
  for (double t : x_ticks_) {
    if (x_log_ && t <= 0) continue;
    x_lo = std::min(x_lo, t);
    x_hi = std::max(x_hi, t);
  }
  if (!std::isfinite(x_lo)) {  // no data and no ticks: an empty frame
    x_lo = x_log_ ? 1 : 0;
    x_hi = x_log_ ? 10 : 1;
  }
  if (empty) {
    y_lo = 0;
    y_hi = 1;
  }
  Axes a{};
  if (x_log_) {
    if (x_hi == x_lo) {  // one x value: a decade around it
      x_lo /= std::sqrt(10.0);
      x_hi *= std::sqrt(10.0);
    }
    a.x_min = x_lo;
    a.x_max = x_hi;
    a.x_ticks = x_ticks_.empty() ? log_ticks(x_lo, x_hi) : x_ticks_;
  } else if (!x_ticks_.empty()) {
    if (x_hi == x_lo) {
      x_lo -= 0.5;
      x_hi += 0.5;
    }
    a.x_min = x_lo;
    a.x_max = x_hi;
    a.x_ticks = x_ticks_;
  } else {
    a.x_ticks = nice_ticks(x_lo, x_hi, 6);
    a.x_min = a.x_ticks.front();
    a.x_max = a.x_ticks.back();
  }
  std::erase_if(a.x_ticks,
                [&](double t) { return (x_log_ && t <= 0) || t < a.x_min || t > a.x_max; });
  if (y_include_zero_) {
    y_lo = std::min(y_lo, 0.0);
    y_hi = std::max(y_hi, 0.0);
  }
  a.y_ticks = nice_ticks(y_lo, y_hi, 5);
  a.y_min = a.y_ticks.front();
  a.y_max = a.y_ticks.back();
  return a;
}

double SvgLineChart::x_pixel(double x) const {
  const Axes a = axes();
  const Area area = plot_area();
  const double share =
      x_log_ ? (std::log(x) - std::log(a.x_min)) / (std::log(a.x_max) - std::log(a.x_min))
             : (x - a.x_min) / (a.x_max - a.x_min);
  return area.left + share * area.width;
}

double SvgLineChart::y_pixel(double y) const {
  const Axes a = axes();
  const Area area = plot_area();
  return area.top + area.height * (1 - (y - a.y_min) / (a.y_max - a.y_min));
}

std::string SvgLineChart::to_svg() const {
  const Axes a = axes();
  const Area area = plot_area();
  // The two mappings of x_pixel / y_pixel, without recomputing the axes per point.
  const auto px = [&](double x) {
    const double share =
        x_log_ ? (std::log(x) - std::log(a.x_min)) / (std::log(a.x_max) - std::log(a.x_min))
               : (x - a.x_min) / (a.x_max - a.x_min);
    return area.left + share * area.width;
  };
  const auto py = [&](double y) {
    return area.top + area.height * (1 - (y - a.y_min) / (a.y_max - a.y_min));
  };
  const double right = area.left + area.width, bottom = area.top + area.height;
  const std::string canvas_width = number(width_ + legend_width(series_));

  std::string svg;
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + canvas_width +
         "\" height=\"" + std::to_string(height_) + "\" viewBox=\"0 0 " + canvas_width + " " +
         std::to_string(height_) + "\">\n";
  svg += "<title>" + xml_escape(title_) + "</title>\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + canvas_width + "\" height=\"" +
         std::to_string(height_) + "\" fill=\"white\"/>\n";
  svg += "<g font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"" +
         number(kFontSize) + "\" fill=\"#222222\">\n";
  svg += "<text class=\"title\" x=\"" + number(width_ / 2.0) + "\" y=\"" + number(26) +
         "\" text-anchor=\"middle\" font-size=\"" + number(kTitleFontSize) +
         "\" font-weight=\"bold\">" + xml_escape(title_) + "</text>\n";
  if (!subtitle_.empty())
    svg += "<text class=\"subtitle\" x=\"" + number(width_ / 2.0) + "\" y=\"" + number(44) +
           "\" text-anchor=\"middle\" fill=\"#555555\">" + xml_escape(subtitle_) + "</text>\n";

  // Grid lines and tick labels.
  const auto x_labels = tick_labels(a.x_ticks);
  const auto y_labels = tick_labels(a.y_ticks);
  svg += "<g class=\"grid\" stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (double t : a.x_ticks)
    svg += "<line x1=\"" + number(px(t)) + "\" y1=\"" + number(area.top) + "\" x2=\"" +
           number(px(t)) + "\" y2=\"" + number(bottom) + "\"/>\n";
  for (double t : a.y_ticks)
    svg += "<line x1=\"" + number(area.left) + "\" y1=\"" + number(py(t)) + "\" x2=\"" +
           number(right) + "\" y2=\"" + number(py(t)) + "\"/>\n";
  svg += "</g>\n";
  svg += "<rect class=\"frame\" x=\"" + number(area.left) + "\" y=\"" + number(area.top) +
         "\" width=\"" + number(area.width) + "\" height=\"" + number(area.height) +
         "\" fill=\"none\" stroke=\"#444444\" stroke-width=\"1\"/>\n";
  svg += "<g class=\"x-ticks\" text-anchor=\"middle\">\n";
  for (std::size_t i = 0; i < a.x_ticks.size(); ++i)
    svg += "<text x=\"" + number(px(a.x_ticks[i])) + "\" y=\"" + number(bottom + 17) + "\">" +
           xml_escape(x_labels[i]) + "</text>\n";
  svg += "</g>\n<g class=\"y-ticks\" text-anchor=\"end\">\n";
  for (std::size_t i = 0; i < a.y_ticks.size(); ++i)
    svg += "<text x=\"" + number(area.left - 6) + "\" y=\"" + number(py(a.y_ticks[i]) + 4) + "\">" +
           xml_escape(y_labels[i]) + "</text>\n";
  svg += "</g>\n";
  svg += "<text class=\"x-label\" x=\"" + number(area.left + area.width / 2) + "\" y=\"" +
         number(height_ - 14.0) + "\" text-anchor=\"middle\">" + xml_escape(x_label_) +
         (x_log_ ? " (log scale)" : "") + "</text>\n";
  const double y_label_x = 18, y_label_y = area.top + area.height / 2;
  svg += "<text class=\"y-label\" x=\"" + number(y_label_x) + "\" y=\"" + number(y_label_y) +
         "\" text-anchor=\"middle\" transform=\"rotate(-90 " + number(y_label_x) + " " +
         number(y_label_y) + ")\">" + xml_escape(y_label_) + "</text>\n";

  // One polyline per series (points that are not finite left out), markers when sparse.
  bool any_point = false;
  for (std::size_t i = 0; i < series_.size(); ++i) {
    const auto& s = series_[i];
    const char* colour = kPalette[i % std::size(kPalette)];
    std::vector<Point> shown;
    for (const auto& p : s.points)
      if (finite(p)) shown.push_back(p);
    any_point = any_point || !shown.empty();
    svg += "<g class=\"series\" stroke=\"" + std::string(colour) + "\" fill=\"" + colour + "\">\n";
    svg += "<title>" + xml_escape(s.name) + "</title>\n";
    std::string points;
    for (const auto& p : shown) {
      if (!points.empty()) points += ' ';
      points += number(px(p.x)) + "," + number(py(p.y));
    }
    svg += "<polyline fill=\"none\" stroke-width=\"2\" stroke-linejoin=\"round\" points=\"" +
           points + "\"/>\n";
    if (shown.size() <= kMaxMarkers)
      for (const auto& p : shown)
        svg += "<circle cx=\"" + number(px(p.x)) + "\" cy=\"" + number(py(p.y)) + "\" r=\"3\"/>\n";
    svg += "</g>\n";
  }
  if (!any_point)
    svg += "<text class=\"no-data\" x=\"" + number(area.left + area.width / 2) + "\" y=\"" +
           number(area.top + area.height / 2) + "\" text-anchor=\"middle\" fill=\"#888888\">" +
           "no data</text>\n";

  // Legend, right of the plot area, in the order the series were added.
  if (!series_.empty()) {
    svg += "<g class=\"legend\">\n";
    const double x0 = right + 14;
    for (std::size_t i = 0; i < series_.size(); ++i) {
      const double y = area.top + 8 + kLegendRow * static_cast<double>(i);
      const char* colour = kPalette[i % std::size(kPalette)];
      svg += "<line x1=\"" + number(x0) + "\" y1=\"" + number(y) + "\" x2=\"" +
             number(x0 + kLegendSwatch) + "\" y2=\"" + number(y) + "\" stroke=\"" + colour +
             "\" stroke-width=\"2\"/>\n";
      svg += "<text x=\"" + number(x0 + kLegendSwatch + kLegendGap) + "\" y=\"" + number(y + 4) +
             "\">" + xml_escape(series_[i].name) + "</text>\n";
    }
    svg += "</g>\n";
  }
  svg += "</g>\n</svg>\n";
  return svg;
}

void SvgLineChart::write(const std::string& path) const {
  const std::string svg = to_svg();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw std::runtime_error("cannot write the chart to " + path + ": " + std::strerror(errno) +
                             " (does the folder exist and is it writable?)");
  out << svg;
  out.flush();
  if (!out) throw std::runtime_error("cannot write the chart to " + path + ": write failed");
}

}  // namespace ctrainer::plot
