// NEFTune (--neftune_noise_alpha): the noise transformers' neftune_post_forward_hook adds, in
// closed form; only in training; on each family's input embeddings. Against HF's Trainer:
// parity.clm_trainer_vs_hf (neftune_noise_alpha 5, every step's loss and grad_norm).
#include <gtest/gtest.h>

#include <cmath>

#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/gpt2/gpt2_heads.h>
#include <ctrainer/models/llama/llama_heads.h>
#include <ctrainer/models/neftune.h>

#include "support/decoder_batches.h"

namespace ctrainer {
namespace neftune_test {

TEST(Neftune, NoiseIsUniformWithinAlphaOverTheRootOfLengthTimesWidth) {
  const at::Tensor embeddings = torch::zeros({64, 8, 32});
  torch::manual_seed(0);
  const at::Tensor noisy = with_neftune_noise(embeddings, 5.0, /*training=*/true);
  const double magnitude = 5.0 / std::sqrt(8.0 * 32.0);
  EXPECT_LE(noisy.abs().max().item<double>(), magnitude * (1 + 1e-6));
  EXPECT_GT(noisy.abs().max().item<double>(), magnitude * 0.999);  // 16,384 draws reach the edge
  EXPECT_NEAR(noisy.mean().item<double>(), 0.0, magnitude * 0.02);
  EXPECT_NEAR(noisy.var().item<double>(), magnitude * magnitude / 3, magnitude * magnitude * 0.03);
  // The draws are zeros_like(x).uniform_(-m, m) on the global generator, as transformers'.
  torch::manual_seed(0);
  const at::Tensor expected = torch::zeros_like(embeddings).uniform_(-magnitude, magnitude);
  EXPECT_TRUE(at::allclose(noisy, expected, 0, 1e-7));
}

TEST(Neftune, NothingInEvalModeOrWithoutAlpha) {
  const at::Tensor embeddings = torch::randn({2, 3, 4});
  EXPECT_TRUE(with_neftune_noise(embeddings, 5.0, /*training=*/false).equal(embeddings));
  EXPECT_TRUE(with_neftune_noise(embeddings, std::nullopt, /*training=*/true).equal(embeddings));
}

template <typename Model, typename Config>
void expect_noise_in_training_only(const nlohmann::json& config_json) {
  torch::manual_seed(1);
  Model model(Config::from_json(config_json, "tiny"));
  const Batch batch = testing::ragged_lm_batch();
  model.train();
  const double clean = model.forward(batch).loss.item().toDouble();
  model.set_neftune_noise_alpha(15.0);
  const double noisy = model.forward(batch).loss.item().toDouble();
  EXPECT_GT(std::abs(noisy - clean), 1e-6);
  model.eval();
  const double evaluated = model.forward(batch).loss.item().toDouble();
  model.set_neftune_noise_alpha(std::nullopt);
  EXPECT_DOUBLE_EQ(model.forward(batch).loss.item().toDouble(), evaluated);
}

TEST(Neftune, DecodersAddItToTheirTokenEmbeddingsWhileTraining) {
  expect_noise_in_training_only<LlamaForCausalLM, LlamaConfig>(testing::tiny_llama_json());
  expect_noise_in_training_only<GPT2LMHeadModel, GPT2Config>(testing::tiny_gpt2_json());
}

}  // namespace neftune_test
}  // namespace ctrainer
