// The FLOP accounting of `ctrainer-bench vs_hf` (benchmarks/vs_hf/vs_hf_flops.h) against totals
// worked out by hand for BERT-base at 128 tokens, and the one case where the two counts must
// agree (a single token: the [CLS] row is the whole sequence).
#include "vs_hf/vs_hf_flops.h"

#include <gtest/gtest.h>

namespace ctrainer::bench::vs_hf {
namespace {

// BERT-base: per layer 4h² + 2h·i = 4·589,824 + 2·768·3,072 = 7,077,888 matmul weights.
constexpr ModelShape kBertBase{768, 12, 3072, 2};

TEST(VsHfFlops, ModelFlopsOfBertBaseAt128Tokens) {
  // 6·128·12·7,077,888 = 65,229,815,808 (encoder weights) + 12·12·128²·768 = 1,811,939,328
  // (attention products) + 6·(768² + 2·768) = 3,548,160 (pooler and classifier).
  EXPECT_DOUBLE_EQ(training_flops_per_sample(kBertBase, 128), 67'045'303'296.0);
}

TEST(VsHfFlops, CtrainerSkipsAllButKeysAndValuesOfTheLastLayersOtherTokens) {
  // 6·(11·128·7,077,888 + 127·2·768² + 7,077,888) = 60,735,356,928
  // + 12·11·128²·768 = 1,660,944,384 + 12·128·768 = 1,179,648 (one query row) + 3,548,160.
  EXPECT_DOUBLE_EQ(ctrainer_training_flops_per_sample(kBertBase, 128), 62'401'029'120.0);
}

TEST(VsHfFlops, OneTokenCostsTheSameEitherWay) {
  for (const ModelShape shape : {kBertBase, ModelShape{128, 2, 512, 2}, ModelShape{64, 1, 37, 3}})
    EXPECT_DOUBLE_EQ(ctrainer_training_flops_per_sample(shape, 1),
                     training_flops_per_sample(shape, 1));
}

}  // namespace
}  // namespace ctrainer::bench::vs_hf
