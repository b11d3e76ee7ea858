// GLUE's metrics per task (examples/glue) against values computed by hand from the closed forms
// (sklearn / SciPy definitions).
#include <cmath>

#include <gtest/gtest.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/examples/glue/glue_metrics.h>

namespace ctrainer::metrics {
namespace glue_metrics_test {

// preds vs labels: TP = 2 (0, 2), FP = 1 (3), FN = 1 (1), TN = 0.
const std::vector<int64_t> kPreds{1, 0, 1, 1};
const std::vector<int64_t> kLabels{1, 1, 1, 0};

TEST(GlueMetrics, MrpcReportsAccuracyF1AndTheirMean) {
  // Rows argmax to kPreds.
  const at::Tensor logits = at::tensor({0.1, 0.9, 2.0, -1.0, -3.0, 3.0, 0.0, 0.5}).view({4, 2});
  const at::Tensor labels = at::tensor(std::vector<int64_t>(kLabels));
  const auto m = glue_metrics("mrpc", logits, labels);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_DOUBLE_EQ(m.at("accuracy"), 0.5);
  EXPECT_DOUBLE_EQ(m.at("f1"), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(m.at("combined_score"), (0.5 + 4.0 / 6.0) / 2);
}

TEST(GlueMetrics, ColaIsMatthewsOnly) {
  const at::Tensor logits = at::tensor({0.1, 0.9, 2.0, -1.0, -3.0, 3.0, 0.0, 0.5}).view({4, 2});
  const auto m = glue_metrics("cola", logits, at::tensor(std::vector<int64_t>(kLabels)));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NEAR(m.at("matthews_correlation"), -1.0 / 3.0, 1e-15);
}

TEST(GlueMetrics, StsbUsesTheSqueezedScores) {
  const at::Tensor scores = at::tensor({1.0, 2.0, 3.0, 4.0}).view({4, 1});
  const at::Tensor labels = at::tensor({2.0, 4.0, 5.0, 9.0});
  const auto m = glue_metrics("stsb", scores, labels);
  EXPECT_NEAR(m.at("pearson"), 11.0 / std::sqrt(130.0), 1e-12);
  EXPECT_DOUBLE_EQ(m.at("spearmanr"), 1.0);
  EXPECT_NEAR(m.at("combined_score"), (11.0 / std::sqrt(130.0) + 1.0) / 2, 1e-12);
}

TEST(GlueMetrics, CustomFilesUseAccuracyOrMse) {
  const auto mse = glue_metrics("", at::tensor({1.0, 3.0}), at::tensor({2.0, 1.0}), true);
  EXPECT_DOUBLE_EQ(mse.at("mse"), 2.5);
  const auto acc = glue_metrics("", at::tensor({0.0, 1.0, 1.0, 0.0}).view({2, 2}),
                                at::tensor(std::vector<int64_t>{1, 1}));
  EXPECT_DOUBLE_EQ(acc.at("accuracy"), 0.5);
}

TEST(GlueMetrics, UnknownTaskNamesTheValidOnes) {
  try {
    glue_metric_names("sst-2");
    FAIL() << "expected an error";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("sst2"), std::string::npos) << e.what();
  }
}

}  // namespace glue_metrics_test
}  // namespace ctrainer::metrics
