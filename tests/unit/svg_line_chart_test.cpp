// integrations/plot/svg_line_chart: tick values for known ranges, label formatting, escaping,
// the log-scale mapping against its closed form, and the structure of the SVG (one polyline per
// series with the right number of points, balanced elements, escaped text). The e2e test
// bench_scaling_quick parses real charts with Python's xml.etree as well.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctrainer/integrations/plot/svg_line_chart.h>

namespace ctrainer::plot {
namespace svg_line_chart_test {

using ::testing::ElementsAre;

std::vector<std::string> all_matches(const std::string& text, const std::regex& re, int group) {
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[group].str());
  return out;
}

/// The polylines' point lists, each as (x, y) pairs.
std::vector<std::vector<Point>> polylines(const std::string& svg) {
  std::vector<std::vector<Point>> out;
  for (const auto& points : all_matches(svg, std::regex("<polyline [^>]*points=\"([^\"]*)\""), 1)) {
    std::vector<Point> line;
    std::istringstream in(points);
    std::string pair;
    while (in >> pair) {
      const auto comma = pair.find(',');
      line.push_back({std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1))});
    }
    out.push_back(line);
  }
  return out;
}

/// A well-formedness check for what the writer emits (no comments, CDATA or DTD): every element
/// closed in order, no raw '<' in text or attributes, every '&' starting one of XML's entities.
::testing::AssertionResult well_formed(const std::string& svg) {
  std::vector<std::string> open;
  std::size_t i = 0;
  if (svg.rfind("<?xml ", 0) != 0) return ::testing::AssertionFailure() << "no XML declaration";
  i = svg.find("?>") + 2;
  while (i < svg.size()) {
    const std::size_t lt = svg.find('<', i);
    const std::string text = svg.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    for (std::size_t amp = text.find('&'); amp != std::string::npos; amp = text.find('&', amp + 1))
      if (!std::regex_search(text.substr(amp), std::regex("^&(amp|lt|gt|quot|apos);")))
        return ::testing::AssertionFailure() << "bare '&' in text: " << text;
    if (lt == std::string::npos) break;
    const std::size_t gt = svg.find('>', lt);
    if (gt == std::string::npos) return ::testing::AssertionFailure() << "unterminated tag";
    const std::string tag = svg.substr(lt + 1, gt - lt - 1);
    if (tag.find('<') != std::string::npos)
      return ::testing::AssertionFailure() << "raw '<' inside a tag: " << tag;
    // Inside a tag a '>' may only end it: quoted values hold no '>' because it is escaped.
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1))
        return ::testing::AssertionFailure()
               << "</" << tag.substr(1) << "> closes " << (open.empty() ? "nothing" : open.back());
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = gt + 1;
  }
  if (!open.empty()) return ::testing::AssertionFailure() << "<" << open.back() << "> not closed";
  return ::testing::AssertionSuccess();
}

TEST(NiceTicks, KnownRanges) {
  EXPECT_THAT(nice_ticks(0, 1), ElementsAre(0.0, 0.2, 0.4, 0.6, 0.8, 1.0));
  EXPECT_THAT(nice_ticks(0, 97), ElementsAre(0, 20, 40, 60, 80, 100));
  EXPECT_THAT(nice_ticks(3, 47, 5), ElementsAre(0, 10, 20, 30, 40, 50));
  EXPECT_THAT(nice_ticks(-3, 7, 3), ElementsAre(-5, 0, 5, 10));
  EXPECT_THAT(nice_ticks(0.0012, 0.0049, 4), ElementsAre(0.001, 0.002, 0.003, 0.004, 0.005));
  // One value: ±10% around it.
  EXPECT_THAT(nice_ticks(50, 50, 5), ElementsAre(44, 46, 48, 50, 52, 54, 56));
  // Covers the range, ends on ticks.
  const auto t = nice_ticks(123.4, 5678.9);
  EXPECT_LE(t.front(), 123.4);
  EXPECT_GE(t.back(), 5678.9);
  EXPECT_THROW(nice_ticks(0, NAN), std::invalid_argument);
  EXPECT_THROW(nice_ticks(0, 1, 1), std::invalid_argument);
  // Ranges a log_history can hold that a double cannot subtract or widen (found by
  // fuzz/trainer_state_fuzzer.cpp, fuzz/corpus/trainer_state/odd_history.json): a few ticks,
  // finite, no undefined conversion of inf to an integer.
  for (const auto& [lo, hi] :
       {std::pair{-1e308, 1e308}, std::pair{1.7e308, 1.7e308}, std::pair{4.9e-324, 4.9e-324}}) {
    const auto ticks = nice_ticks(lo, hi);
    EXPECT_GE(ticks.size(), 2u) << lo << " " << hi;
    EXPECT_LE(ticks.size(), 20u) << lo << " " << hi;
    for (const double tick : ticks) EXPECT_TRUE(std::isfinite(tick)) << lo << " " << hi;
  }
}

TEST(LogTicks, DecadesOrOneTwoFive) {
  EXPECT_THAT(log_ticks(1e-5, 1), ElementsAre(1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0));
  EXPECT_THAT(log_ticks(4, 64), ElementsAre(5, 10, 20, 50));
  EXPECT_THAT(log_ticks(1, 10), ElementsAre(1, 2, 5, 10));
  // Less than one 1-2-5 step: linear ticks inside the range.
  EXPECT_THAT(log_ticks(32, 48), ElementsAre(35, 40, 45));
  EXPECT_THROW(log_ticks(0, 10), std::invalid_argument);
}

TEST(TickLabels, SharedDecimalsAndScientific) {
  EXPECT_THAT(tick_labels({0, 0.2, 0.4}), ElementsAre("0.0", "0.2", "0.4"));
  EXPECT_THAT(tick_labels({0, 50, 100}), ElementsAre("0", "50", "100"));
  EXPECT_THAT(tick_labels({-0.05, 0, 0.05}), ElementsAre("-0.05", "0.00", "0.05"));
  EXPECT_THAT(tick_labels({1e-5, 1e-3, 1e-1}), ElementsAre("1e-05", "0.001", "0.1"));
  EXPECT_THAT(tick_labels({0, 2e6, 4e6}), ElementsAre("0", "2e+06", "4e+06"));
  EXPECT_THAT(tick_labels({4, 8, 16, 32, 64}), ElementsAre("4", "8", "16", "32", "64"));
  EXPECT_THAT(tick_labels({-1e-12, 1, 2}), ElementsAre("0", "1", "2"));
}

TEST(XmlEscape, FiveCharacters) {
  EXPECT_EQ(xml_escape("a<b & \"c\" > 'd'"), "a&lt;b &amp; &quot;c&quot; &gt; &apos;d&apos;");
  EXPECT_EQ(xml_escape("plain"), "plain");
}

TEST(SvgLineChart, OnePolylinePerSeriesWithItsPoints) {
  SvgLineChart chart("Throughput");
  chart.x_label("batch size").y_label("samples/s");
  chart.add_series("one", {{1, 10}, {2, 20}, {3, 15}});
  chart.add_series("two", {{1, 5}, {2, 7}});
  chart.add_series("diverged", {{1, 1}, {2, NAN}, {3, INFINITY}, {4, 2}});
  const std::string svg = chart.to_svg();
  EXPECT_TRUE(well_formed(svg));
  const auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].size(), 3u);
  EXPECT_EQ(lines[1].size(), 2u);
  EXPECT_EQ(lines[2].size(), 2u) << "non-finite points are left out";
  // Every point lands where x_pixel / y_pixel say (2-decimal coordinates).
  EXPECT_NEAR(lines[0][1].x, chart.x_pixel(2), 0.006);
  EXPECT_NEAR(lines[0][1].y, chart.y_pixel(20), 0.006);
  // The y axis starts at 0 and ends on a tick above the data; higher y is higher up.
  const auto axes = chart.axes();
  EXPECT_EQ(axes.y_min, 0);
  EXPECT_GE(axes.y_max, 20);
  EXPECT_LT(chart.y_pixel(20), chart.y_pixel(10));
  // Legend entries in order, after the plotted lines.
  const auto legend = svg.substr(svg.find("class=\"legend\""));
  EXPECT_LT(legend.find(">one<"), legend.find(">two<"));
  EXPECT_LT(legend.find(">two<"), legend.find(">diverged<"));
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\""), std::string::npos);
}

TEST(SvgLineChart, TickLabelsOfKnownRanges) {
  SvgLineChart chart;
  chart.add_series("s", {{0, 0.03}, {97, 0.97}});
  const std::string svg = chart.to_svg();
  const auto x_block = svg.substr(svg.find("class=\"x-ticks\""));
  const auto y_block = svg.substr(svg.find("class=\"y-ticks\""));
  const std::regex label(">([^<]+)</text>");
  const auto x = all_matches(x_block.substr(0, x_block.find("</g>")), label, 1);
  const auto y = all_matches(y_block.substr(0, y_block.find("</g>")), label, 1);
  EXPECT_THAT(x, ElementsAre("0", "20", "40", "60", "80", "100"));
  EXPECT_THAT(y, ElementsAre("0.0", "0.2", "0.4", "0.6", "0.8", "1.0"));
}

TEST(SvgLineChart, EscapesEveryText) {
  SvgLineChart chart("loss <train> & \"eval\"");
  chart.x_label("step & <epoch>").y_label("\"y\"").subtitle("run 'a' & <b>");
  chart.add_series("a<b & \"c\"", {{1, 1}, {2, 2}});
  const std::string svg = chart.to_svg();
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(svg.find("<train>"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_NE(svg.find("loss &lt;train&gt; &amp; &quot;eval&quot;"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b &amp; &quot;c&quot;</text>"), std::string::npos);
  EXPECT_NE(svg.find("step &amp; &lt;epoch&gt;"), std::string::npos);
  EXPECT_NE(svg.find("run &apos;a&apos; &amp; &lt;b&gt;"), std::string::npos);
}

TEST(SvgLineChart, LogScaleMappingIsClosedForm) {
  SvgLineChart chart;
  chart.x_log_scale().x_ticks({4, 8, 16, 32, 64});
  chart.add_series("s", {{4, 1}, {8, 2}, {16, 3}, {32, 4}, {64, 5}});
  const auto area = chart.plot_area();
  const auto axes = chart.axes();
  EXPECT_EQ(axes.x_min, 4);
  EXPECT_EQ(axes.x_max, 64);
  EXPECT_THAT(axes.x_ticks, ElementsAre(4, 8, 16, 32, 64));
  for (double x : {4.0, 8.0, 10.0, 16.0, 50.0, 64.0}) {
    const double expected =
        area.left + (std::log(x) - std::log(4.0)) / (std::log(64.0) - std::log(4.0)) * area.width;
    EXPECT_NEAR(chart.x_pixel(x), expected, 1e-9) << "x = " << x;
  }
  // Powers of two are evenly spaced on a log axis: 4 equal gaps of width / 4.
  const auto line = polylines(chart.to_svg()).at(0);
  ASSERT_EQ(line.size(), 5u);
  for (std::size_t i = 1; i < line.size(); ++i)
    EXPECT_NEAR(line[i].x - line[i - 1].x, area.width / 4, 0.011);
  EXPECT_NE(chart.to_svg().find("(log scale)"), std::string::npos);
}

TEST(SvgLineChart, NonPositiveXOnLogScaleNamesTheSeries) {
  SvgLineChart chart;
  chart.x_log_scale().add_series("lr sweep", {{0, 1}, {1, 2}});
  try {
    chart.to_svg();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'lr sweep'"), std::string::npos) << e.what();
  }
}

TEST(SvgLineChart, EmptyChartIsStillADocument) {
  SvgLineChart chart("nothing yet");
  const std::string svg = chart.to_svg();
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find("no data"), std::string::npos);
  chart.add_series("empty", {});
  const std::string with_series = chart.to_svg();
  EXPECT_TRUE(well_formed(with_series));
  ASSERT_EQ(polylines(with_series).size(), 1u);
  EXPECT_TRUE(polylines(with_series)[0].empty());
}

TEST(SvgLineChart, WriteReportsTheUnwritablePath) {
  SvgLineChart chart;
  chart.add_series("s", {{1, 1}});
  const auto dir = std::filesystem::temp_directory_path() / "ctrainer_svg_test_missing_dir";
  std::filesystem::remove_all(dir);
  try {
    chart.write((dir / "chart.svg").string());
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ctrainer_svg_test_missing_dir/chart.svg"),
              std::string::npos)
        << e.what();
  }
  const auto file = std::filesystem::temp_directory_path() / "ctrainer_svg_test_chart.svg";
  chart.write(file.string());
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), chart.to_svg());
  std::filesystem::remove(file);
}

}  // namespace svg_line_chart_test
}  // namespace ctrainer::plot
