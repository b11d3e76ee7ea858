// Seq2SeqTrainer and Seq2SeqTrainingArguments: the flags, the sortish order on closed forms,
// generated predictions padded as transformers pads them, refusals, and the token-level loss of
// T5 and BART over an accumulation window. Against transformers' Seq2SeqTrainer:
// tests/parity/seq2seq_trainer_vs_hf.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <set>

#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/args/seq2seq_training_args.h>
#include <ctrainer/trainer/data/sortish_sampler.h>
#include <ctrainer/trainer/seq2seq_trainer.h>

#include "support/expect_error.h"
#include "support/parse_args.h"
#include "support/test_data.h"

namespace ctrainer {
namespace seq2seq_trainer_test {

using testing::expect_error;

// ---- sortish order ------------------------------------------------------------------------------

TEST(SortishIndices, OneChunkSortedLongestFirstThenTheBatchesInTheDrawnOrder) {
  const std::vector<int64_t> lengths = {3, 9, 1, 7, 5, 2, 8, 4};
  std::vector<int64_t> order(8);
  std::iota(order.begin(), order.end(), 0);
  // Sorted: 1(9) 6(8) | 3(7) 4(5) | 7(4) 0(3) | 5(2) 2(1); batches 1..3 follow as 3, 1, 2.
  EXPECT_EQ(sortish_indices(lengths, 2, order, {2, 0, 1}),
            (std::vector<int64_t>{1, 6, 5, 2, 3, 4, 7, 0}));
}

TEST(SortishIndices, TheBatchWithTheLongestExampleOfAnyChunkGoesFirst) {
  // 60 examples of length i, batch size 1: chunks of 50; the second chunk's first example (59)
  // is the longest, so its batch swaps places with the first one (49).
  std::vector<int64_t> lengths(60), order(60), batch_order(59);
  std::iota(lengths.begin(), lengths.end(), 0);
  std::iota(order.begin(), order.end(), 0);
  std::iota(batch_order.begin(), batch_order.end(), 0);
  std::vector<int64_t> expected = {59};
  for (int64_t i = 48; i >= 0; --i) expected.push_back(i);
  expected.push_back(49);
  for (int64_t i = 58; i >= 50; --i) expected.push_back(i);
  EXPECT_EQ(sortish_indices(lengths, 1, order, batch_order), expected);
}

TEST(SortishSampler, ASeededPermutationOfSortedBatchesTheLongestFirst) {
  // 32 examples: whole batches (a short last batch may land anywhere in the drawn order).
  std::vector<int64_t> lengths(32);
  for (int64_t i = 0; i < 32; ++i) lengths[static_cast<size_t>(i)] = (i * 7) % 23;
  const SortishSampler sampler(lengths, 4, /*seed=*/5);
  const std::vector<int64_t> epoch0 = sampler.indices(0);
  std::vector<int64_t> sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(32);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
  EXPECT_EQ(sampler.indices(0), epoch0);  // a pure function of (seed, epoch)
  EXPECT_NE(sampler.indices(1), epoch0);
  EXPECT_EQ(lengths[static_cast<size_t>(epoch0[0])], 22);  // the longest comes first
  for (size_t start = 0; start < epoch0.size(); start += 4)
    for (size_t i = start + 1; i < std::min<size_t>(start + 4, epoch0.size()); ++i)
      EXPECT_GE(lengths[static_cast<size_t>(epoch0[i - 1])],
                lengths[static_cast<size_t>(epoch0[i])])
          << "batch at " << start << " is not sorted longest first";
  // Two ranks share that order (each step's 2 x 2 examples are one sortish batch of 4).
  const SortishSampler rank0(lengths, 4, 5, 2, 0), rank1(lengths, 4, 5, 2, 1);
  EXPECT_EQ(rank0.size(), 16);
  const std::vector<int64_t> a = rank0.indices(0), b = rank1.indices(0);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i], epoch0[2 * i]);
    EXPECT_EQ(b[i], epoch0[2 * i + 1]);
  }
  expect_error([&] { SortishSampler(lengths, 0, 1); }, {"batch_size must be >= 1"});
}

// ---- Seq2SeqTrainingArguments -------------------------------------------------------------------

TEST(Seq2SeqTrainingArguments, FlagsAndConfigKeysUnderTheirOwnHeading) {
  ArgumentParser parser("test");
  Seq2SeqTrainingArguments args;
  add_seq2seq_options(parser, args);
  ASSERT_TRUE(testing::run_parse(
      parser,
      {"--predict_with_generate", "--generation_num_beams", "4", "--generation_max_length", "64",
       "--sortish_sampler", "--learning_rate", "1e-3"},
      args));
  EXPECT_TRUE(args.predict_with_generate);
  EXPECT_TRUE(args.sortish_sampler);
  EXPECT_EQ(args.generation_num_beams, 4);
  EXPECT_EQ(args.generation_max_length, 64);
  EXPECT_FALSE(args.generation_config);
  EXPECT_DOUBLE_EQ(args.learning_rate, 1e-3);
  EXPECT_NE(parser.help().find("\nSeq2SeqTrainingArguments:\n  --sortish_sampler"),
            std::string::npos);
  const nlohmann::json json = to_json(args);
  EXPECT_EQ(json.at("predict_with_generate"), true);
  EXPECT_EQ(json.at("generation_num_beams"), 4);
  EXPECT_TRUE(json.at("generation_config").is_null());
  EXPECT_DOUBLE_EQ(json.at("learning_rate").get<double>(), 1e-3);
  // A program of TrainingArguments (run_glue) does not take them, as transformers' parser.
  EXPECT_NE(testing::parse_error({"--predict_with_generate"}).find("--predict_with_generate"),
            std::string::npos);
}

TEST(Seq2SeqTrainingArguments, RefusesBadValuesNamingTheFlag) {
  auto refused = [](auto change, const std::vector<std::string>& parts) {
    Seq2SeqTrainingArguments args;
    change(args);
    expect_error([&] { args.check_seq2seq_fields(); }, parts);
  };
  refused([](auto& a) { a.generation_num_beams = 0; }, {"--generation_num_beams", "at least 1"});
  refused([](auto& a) { a.generation_max_length = -2; }, {"--generation_max_length"});
  refused([](auto& a) { a.generation_config = "/no/such/generation_config.json"; },
          {"--generation_config /no/such/generation_config.json", "no such file"});
  refused(
      [](auto& a) {
        a.sortish_sampler = true;
        a.train_sampling_strategy = TrainSamplingStrategy::kGroupByLength;
      },
      {"--sortish_sampler", "--train_sampling_strategy random"});
}

// ---- Seq2SeqTrainer -----------------------------------------------------------------------------

std::shared_ptr<Model> tiny_t5(uint64_t seed = 0) {
  torch::manual_seed(seed);
  const nlohmann::json json = {
      {"model_type", "t5"}, {"vocab_size", 40},    {"d_model", 16},
      {"d_kv", 4},          {"d_ff", 24},          {"num_layers", 2},
      {"num_heads", 4},     {"dropout_rate", 0.0}, {"decoder_start_token_id", 0},
      {"eos_token_id", 1},  {"pad_token_id", 0}};
  auto model =
      AutoModel::from_config(*AutoConfig::from_json(json, "t5.json"), ModelTask::kSeq2SeqLM);
  // Random tiny T5s repeat one token; larger weights make the generations differ.
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters()) p.mul_(8.0);
  return model;
}

/// Sources of 5 tokens (the last one padding in odd rows), labels of 4 (the last -100 in even
/// rows); lengths() for sortish sampling.
class PairDataset : public TensorDataset {
 public:
  PairDataset() : TensorDataset(make()) {}
  std::optional<std::vector<int64_t>> lengths() const override {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < size(); ++i) out.push_back(5 - (i % 2));
    return out;
  }

 private:
  static std::map<std::string, at::Tensor> make() {
    at::Tensor ids = at::arange(2, 32, at::kLong).reshape({6, 5});
    at::Tensor mask = at::ones({6, 5}, at::kLong);
    at::Tensor labels = at::arange(3, 27, at::kLong).reshape({6, 4});
    for (int64_t i = 0; i < 6; ++i) {
      if (i % 2 == 1) {
        ids[i][4] = 0;
        mask[i][4] = 0;
      } else {
        labels[i][3] = -100;
      }
    }
    return {{"input_ids", ids}, {"attention_mask", mask}, {"labels", labels}};
  }
};

Seq2SeqTrainingArguments seq2seq_args(const std::string& name) {
  Seq2SeqTrainingArguments args;
  static_cast<TrainingArguments&>(args) = testing::quiet_args(name);
  args.per_device_eval_batch_size = 4;
  args.predict_with_generate = true;
  return args;
}

TEST(Seq2SeqTrainer, PredictionsAreGeneratedIdsPaddedToTheModelsMaxLength) {
  auto data = std::make_shared<PairDataset>();
  auto args = seq2seq_args("padded");
  args.generation_max_length = 5;
  Seq2SeqTrainer trainer(tiny_t5(), args, {.eval_dataset = data});
  const PredictionOutput out = trainer.predict(data);
  // Generated: decoder start + at most 4 tokens; padded with the pad id to the generation
  // config's max_length (20 by default), not to the call's 5.
  ASSERT_EQ(out.predictions.sizes(), (std::vector<int64_t>{6, 20}));
  EXPECT_TRUE(out.predictions.select(1, 0).eq(0).all().item<bool>());
  EXPECT_TRUE(out.predictions.narrow(1, 5, 15).eq(0).all().item<bool>());
  EXPECT_TRUE(out.predictions.narrow(1, 1, 4).ne(0).any().item<bool>());
  // Labels padded the same way, with the pad id (their own -100 kept).
  ASSERT_EQ(out.label_ids.sizes(), (std::vector<int64_t>{6, 20}));
  EXPECT_TRUE(
      out.label_ids.narrow(1, 0, 4).equal(data->get_stacked({0, 1, 2, 3, 4, 5})->at("labels")));
  EXPECT_TRUE(out.label_ids.narrow(1, 4, 16).eq(0).all().item<bool>());

  // The loss is still that of a forward with the labels: the Trainer's own.
  auto plain_args = seq2seq_args("plain");
  plain_args.predict_with_generate = false;
  Seq2SeqTrainer plain(tiny_t5(), plain_args, {.eval_dataset = data});
  EXPECT_DOUBLE_EQ(out.metrics.at("test_loss"), plain.predict(data).metrics.at("test_loss"));

  // A generation config with a shorter max_length pads nothing the call lets reach 5; the call's
  // own settings (a gen_kwargs max_new_tokens) win over the arguments'.
  generation::GenerationConfig short_config;
  short_config.max_length = 3;
  short_config.decoder_start_token_id = 0;
  Seq2SeqTrainer shorter(tiny_t5(), args, {.eval_dataset = data},
                         {.model_generation_config = short_config});
  EXPECT_EQ(shorter.predict(data).predictions.size(1), 5);
  generation::GenerationConfig call;
  call.max_new_tokens = 2;
  EXPECT_EQ(shorter.predict(data, "test", call).predictions.size(1), 3);
}

TEST(Seq2SeqTrainer, RefusesPredictWithGenerateForAModelThatCannotGenerate) {
  auto args = seq2seq_args("classifier");
  expect_error([&] { Seq2SeqTrainer(std::make_shared<MLPClassifier>(4, 8, 3), args); },
               {"--predict_with_generate", "cannot generate"});
  args.predict_with_generate = false;  // training and plain evaluation remain possible
  EXPECT_NO_THROW(Seq2SeqTrainer(std::make_shared<MLPClassifier>(4, 8, 3), args));
}

TEST(Seq2SeqTrainer, TrainsInSortishOrderAndWritesItsArguments) {
  auto args = seq2seq_args("sortish");
  args.sortish_sampler = true;
  args.per_device_train_batch_size = 2;
  args.max_steps = 2;
  args.save_strategy = SaveStrategy::kNo;
  Seq2SeqTrainer trainer(tiny_t5(), args, {.train_dataset = std::make_shared<PairDataset>()});
  EXPECT_EQ(trainer.get_train_dataloader()->sampler().name(), "sortish");
  trainer.train();
  std::ifstream file(std::filesystem::path(args.output_dir) / "training_args.json");
  const nlohmann::json written = nlohmann::json::parse(file);
  EXPECT_EQ(written.at("sortish_sampler"), true);
  EXPECT_EQ(written.at("predict_with_generate"), true);
}

// ---- the token-level loss of encoder-decoders ---------------------------------------------------

TEST(Seq2SeqLoss, TheWindowsTokenLossOfTwoHalvesIsTheLargeBatchLoss) {
  const nlohmann::json bart = {
      {"model_type", "bart"},          {"vocab_size", 40},      {"d_model", 16},
      {"encoder_layers", 1},           {"decoder_layers", 1},   {"encoder_attention_heads", 4},
      {"decoder_attention_heads", 4},  {"encoder_ffn_dim", 24}, {"decoder_ffn_dim", 24},
      {"max_position_embeddings", 16}, {"dropout", 0.0}};
  std::vector<std::shared_ptr<Model>> models = {
      tiny_t5(),
      AutoModel::from_config(*AutoConfig::from_json(bart, "bart.json"), ModelTask::kSeq2SeqLM)};
  const Batch all = *PairDataset().get_stacked({0, 1, 2, 3, 4, 5});
  const Batch first = *PairDataset().get_stacked({0, 1, 2});
  const Batch second = *PairDataset().get_stacked({3, 4, 5});
  const int64_t tokens = all.at("labels").ne(-100).sum().item<int64_t>();  // 21: ragged halves
  for (const auto& model : models) {
    model->eval();
    EXPECT_TRUE(model->accepts_loss_kwargs());
    EXPECT_FALSE(model->loss_shifts_labels());  // every label is a target (unshifted)
    const double whole = model->forward(all).loss.item<double>();
    const double halves = (model->forward_with_num_items(first, tokens).loss +
                           model->forward_with_num_items(second, tokens).loss)
                              .item<double>();
    // fp32 losses of ~130: equal up to float rounding (1e-6 relative is a few units in the last
    // place; an absolute 1e-6 is below one and held only while the sums rounded alike).
    EXPECT_NEAR(halves, whole, 1e-6 * std::abs(whole));
    // The micro-batches' own means, averaged, differ: the halves hold 11 and 10 tokens.
    const double means = (model->forward(first).loss + model->forward(second).loss).item<double>();
    EXPECT_GT(std::abs(means / 2 - whole), 1e-6);
  }
}

}  // namespace seq2seq_trainer_test
}  // namespace ctrainer
