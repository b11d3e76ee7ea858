// Generic metrics against values computed by hand from the closed forms (sklearn / SciPy
// definitions), including ties for Spearman and the multi-class MCC.
#include <cmath>

#include <gtest/gtest.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/metrics/classification_metrics.h>
#include <ctrainer/trainer/metrics/correlation_metrics.h>

namespace ctrainer::metrics {
namespace metrics_test {

// preds vs labels: TP = 2 (0, 2), FP = 1 (3), FN = 1 (1), TN = 0.
const std::vector<int64_t> kPreds{1, 0, 1, 1};
const std::vector<int64_t> kLabels{1, 1, 1, 0};

TEST(ClassificationMetrics, AccuracyCountsMatches) {
  EXPECT_DOUBLE_EQ(accuracy(kPreds, kLabels), 0.5);
  EXPECT_DOUBLE_EQ(accuracy({2, 2, 2}, {2, 2, 2}), 1.0);
}

TEST(ClassificationMetrics, BinaryF1) {
  EXPECT_DOUBLE_EQ(f1_binary(kPreds, kLabels), 4.0 / 6.0);  // 2TP / (2TP + FP + FN)
  // F1 of the other class: TP = 0 → 0.
  EXPECT_DOUBLE_EQ(f1_binary(kPreds, kLabels, 0), 0.0);
  // No positive anywhere: sklearn's zero_division gives 0.
  EXPECT_DOUBLE_EQ(f1_binary({0, 0}, {0, 0}), 0.0);
}

TEST(ClassificationMetrics, MatthewsBinaryEqualsTheTwoByTwoFormula) {
  // (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (0 − 1) / sqrt(3·3·1·1).
  EXPECT_NEAR(matthews_corrcoef(kPreds, kLabels), -1.0 / 3.0, 1e-15);
  EXPECT_DOUBLE_EQ(matthews_corrcoef({1, 0, 1, 0}, {1, 0, 1, 0}), 1.0);
  EXPECT_DOUBLE_EQ(matthews_corrcoef({0, 1, 0, 1}, {1, 0, 1, 0}), -1.0);
}

TEST(ClassificationMetrics, MatthewsMultiClass) {
  // t = (2,2,2), p = (2,3,1), correct = 4, s = 6:
  // (4·6 − 12) / sqrt((36 − 14)(36 − 12)) = 12 / sqrt(528).
  EXPECT_NEAR(matthews_corrcoef({0, 1, 1, 1, 2, 0}, {0, 0, 1, 1, 2, 2}), 12.0 / std::sqrt(528.0),
              1e-15);
}

TEST(ClassificationMetrics, MatthewsIsZeroWhenOneSideHasOneClass) {
  EXPECT_DOUBLE_EQ(matthews_corrcoef({1, 1, 1}, {0, 1, 0}), 0.0);
  EXPECT_DOUBLE_EQ(matthews_corrcoef({0, 1, 0}, {1, 1, 1}), 0.0);
}

TEST(ClassificationMetrics, SizeMismatchIsAnError) {
  EXPECT_THROW(accuracy({1, 0}, {1}), ArgumentError);
  EXPECT_THROW(f1_binary({}, {}), ArgumentError);
}

TEST(CorrelationMetrics, Pearson) {
  // x̄ = 2.5, ȳ = 5: Sxy = 11, Sxx = 5, Syy = 26.
  EXPECT_NEAR(pearson({1, 2, 3, 4}, {2, 4, 5, 9}), 11.0 / std::sqrt(130.0), 1e-15);
  EXPECT_DOUBLE_EQ(pearson({1, 2, 3}, {-2, -4, -6}), -1.0);
  EXPECT_TRUE(std::isnan(pearson({1, 1, 1}, {1, 2, 3})));
  EXPECT_THROW(pearson({1}, {1}), ArgumentError);
}

TEST(CorrelationMetrics, AverageRanksShareTies) {
  EXPECT_EQ(average_ranks({3, 1, 2, 2, 5, 2}), (std::vector<double>{5, 1, 3, 3, 6, 3}));
  EXPECT_EQ(average_ranks({7, 7}), (std::vector<double>{1.5, 1.5}));
}

TEST(CorrelationMetrics, SpearmanWithTies) {
  // Ranks (1, 2.5, 2.5, 4) vs (1, 3, 2, 4): Sxy = 4.5, Sxx = 4.5, Syy = 5.
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 3, 2, 4}), 4.5 / std::sqrt(22.5), 1e-15);
  // Monotone but not linear → exactly 1.
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {1, 8, 27, 64}), 1.0);
}

}  // namespace metrics_test
}  // namespace ctrainer::metrics
