// Scenario dataloader: can the loader keep a small-BERT training step fed? Tokenized SST-2
// train padded to 128 tokens (run_glue's default), batches of 32 through DataCollatorWithPadding
// and BatchStream; the step is BertForSequenceClassification of BERT-tiny size (hidden 128, 2
// layers, 2 heads, ffn 512: the README demo's model) doing forward, backward and AdamW. Measured:
// loader batches/s alone for 0/1/2 workers, the step alone, and the step fed by the loader.
// metrics.headroom = loader batches/s (0 workers) / step steps/s (>> 1: the loader is not the
// bottleneck); metrics.fed_ratio = fed steps/s / step-alone steps/s with 2 workers (target ~1).
#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <torch/optim/adamw.h>

#include <ctrainer/examples/glue/glue_features.h>
#include <ctrainer/examples/glue/glue_reader.h>
#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>
#include <ctrainer/trainer/data/batch_stream.h>
#include <ctrainer/trainer/data/padding_collator.h>

#include "bench_report.h"

namespace ctrainer::bench {
namespace {

using Clock = std::chrono::steady_clock;
const std::string kData = CTRAINER_EXAMPLES_DATA_DIR;
constexpr int64_t kBatch = 32;
constexpr int64_t kSeq = 128;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Setup {
  std::shared_ptr<TokenizedDataset> dataset;
  int64_t pad_id = 0;
};

std::unique_ptr<DataLoader> make_loader(const Setup& s, int64_t workers) {
  DataLoaderOptions opts{.batch_size = kBatch, .num_workers = workers, .prefetch_factor = 2};
  return std::make_unique<DataLoader>(
      s.dataset, std::make_shared<RandomSampler>(s.dataset->size(), 42), opts,
      std::make_shared<DataCollatorWithPadding>(PaddingCollatorOptions{.pad_token_id = s.pad_id}));
}

/// One small BERT and optimizer; step() trains on a batch.
class ModelStep {
 public:
  ModelStep() {
    torch::manual_seed(1234);
    BertConfig c;
    c.vocab_size = 30522;
    c.hidden_size = 128;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 2;
    c.intermediate_size = 512;
    c.set_num_labels(2);
    model_ = std::make_shared<BertForSequenceClassification>(c);
    optimizer_ = std::make_unique<torch::optim::AdamW>(model_->parameters(),
                                                       torch::optim::AdamWOptions(1e-4));
  }
  void step(const Batch& batch) {
    optimizer_->zero_grad();
    auto out = model_->forward(batch);
    out.loss.backward();
    optimizer_->step();
  }

 private:
  std::shared_ptr<BertForSequenceClassification> model_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
};

BenchResult run_dataloader(const BenchOptions& options) {
  const auto tokenizer =
      BertTokenizer::from_vocab_file(kData + "/vocab/bert-base-uncased-vocab.txt");
  auto split = glue::read_glue_split(glue::glue_task("sst2"), kData + "/glue/SST-2", "train");
  if (options.quick) split.examples.resize(2000);
  Setup setup{
      glue::tokenize_split(split, tokenizer, {.max_seq_length = kSeq, .pad_to_max_length = true}),
      tokenizer.pad_token_id()};
  const int64_t loader_batches = options.quick ? 20 : 400;
  const int64_t steps = options.quick ? 3 : 20;

  BenchResult result;
  result.scenario = "dataloader";
  result.header = {"measurement", "workers", "per second (median)", "vs step alone"};
  result.config = {{"data", "SST-2 train, tokenized, padded to 128"},
                   {"batch_size", kBatch},
                   {"seq_len", kSeq},
                   {"collator", "DataCollatorWithPadding"},
                   {"model",
                    "BertForSequenceClassification hidden 128, 2 layers, 2 heads, ffn 512, "
                    "vocab 30522 (BERT-tiny), AdamW"},
                   {"loader_batches_per_round", loader_batches},
                   {"steps_per_round", steps},
                   {"rounds", options.rounds},
                   {"intra_op_threads", at::get_num_threads()}};

  // 1. The loader alone.
  std::map<int64_t, double> loader_bps;
  for (int64_t workers : {0, 1, 2}) {
    auto loader = make_loader(setup, workers);
    std::vector<double> rates;
    for (int64_t r = 0; r <= options.rounds; ++r) {  // round 0 warms up
      const auto start = Clock::now();
      BatchStream stream(*loader, 0, loader_batches);
      while (!stream.done()) stream.next();
      if (r > 0) rates.push_back(static_cast<double>(loader_batches) / seconds_since(start));
    }
    loader_bps[workers] = median(rates);
  }

  // 2. The step alone, on one fixed batch; 3. the step fed by the loader.
  ModelStep model;
  const Batch fixed = make_loader(setup, 0)->batch(0);
  model.step(fixed);  // warm-up
  std::vector<double> alone;
  std::map<int64_t, std::vector<double>> fed;
  for (int64_t r = 0; r < options.rounds; ++r) {
    auto start = Clock::now();
    for (int64_t i = 0; i < steps; ++i) model.step(fixed);
    alone.push_back(static_cast<double>(steps) / seconds_since(start));
    for (int64_t workers : {0, 2}) {
      auto loader = make_loader(setup, workers);
      start = Clock::now();
      BatchStream stream(*loader, 0, steps);
      while (!stream.done()) model.step(stream.next());
      fed[workers].push_back(static_cast<double>(steps) / seconds_since(start));
    }
  }
  const double step_sps = median(alone);
  for (const auto& [workers, bps] : loader_bps) {
    result.metrics["loader_batches_per_second"][std::to_string(workers) + "_workers"] = bps;
    result.rows.push_back({{"loader alone (batches)", std::to_string(workers),
                            fmt::format("{:.1f}", bps), fmt::format("{:.1f}x", bps / step_sps)}});
  }
  result.metrics["step_alone_steps_per_second"] = step_sps;
  result.rows.push_back({{"step alone (steps)", "-", fmt::format("{:.2f}", step_sps), "1.00"}});
  for (const auto& [workers, rates] : fed) {
    const double sps = median(rates);
    result.metrics["fed_steps_per_second"][std::to_string(workers) + "_workers"] = sps;
    result.rows.push_back({{"step fed by loader (steps)", std::to_string(workers),
                            fmt::format("{:.2f}", sps), fmt::format("{:.3f}", sps / step_sps)}});
  }
  result.metrics["headroom"] = loader_bps[0] / step_sps;
  result.metrics["fed_ratio"] = median(fed[2]) / step_sps;
  return result;
}

}  // namespace

Scenario dataloader_scenario() {
  return {"dataloader",
          "loader batches/s vs a small-BERT-sized training step (SST-2, batch 32, seq 128)",
          run_dataloader};
}

}  // namespace ctrainer::bench
