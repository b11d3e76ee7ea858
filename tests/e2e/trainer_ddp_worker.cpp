// A Trainer program for the multi-process tests (tests/e2e/trainer_ddp{,_lm}_test.cpp), started by
// ctrainer-run or directly with torchrun's environment. It trains an MLP on a fixed, overlapping
// three-class Gaussian mixture with every TrainingArguments flag available, then evaluates, and
// writes under --dump_dir:
//   params.<rank>.txt   the final parameters (hex floats, tests/support/parameter_text.h)
//   eval.<rank>.json    evaluate()'s metrics, and predict()'s argmax predictions and labels
//   scale.<rank>.txt    the loss scale after every optimizer step (with --loss_scaling)
// With --causal_lm it trains a tiny causal LM (--causal_lm_family llama or gpt2) on sequences of
// ragged lengths instead (the token-level loss and decoder sharding tests) and writes only
// params.<rank>.txt, the saved model (dump_dir/model/) and, from rank 0, that model's parameters
// read back (saved_params.txt).
// Failure injection for the tests (only on the first attempt, TORCHELASTIC_RESTART_COUNT 0):
//   --crash_at_step S --crash_rank R --crash_mode exit|kill|hang|sigterm|hang_in_step
//   --poison_at_step S --poison_rank R  (an inf in one gradient of rank R only, after the
//                                        gradients were all-reduced: only that rank sees it)
//   --rank1_hidden_size H / --rank1_learning_rate LR  (rank 1 starts differently)
// Exit codes: 0 success, 2 bad arguments (ArgumentError), 1 any other error.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <thread>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/trainer.h>

#include "support/decoder_batches.h"
#include "support/parameter_dump.h"

namespace {

using ctrainer::Trainer;
using ctrainer::TrainerCallback;

constexpr int64_t kFeatures = 4;
constexpr int64_t kClasses = 3;

/// Three Gaussian blobs that overlap (accuracy well below 1, so metrics can disagree).
std::shared_ptr<ctrainer::TensorDataset> make_mixture(int64_t n, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor labels = at::arange(n, at::kLong).remainder(kClasses);
  at::Tensor centers = at::eye(kClasses, kFeatures, at::kFloat).index_select(0, labels) * 1.5;
  at::Tensor x = centers + at::randn({n, kFeatures}, gen, at::kFloat);
  return std::make_shared<ctrainer::TensorDataset>(
      std::map<std::string, at::Tensor>{{"x", x}, {"labels", labels}});
}

/// Token sequences of 2..8 tokens, right-padded to 8 (id 0, labels -100): the label tokens per
/// example differ, so how a batch splits over micro-batches and ranks matters to a token-level
/// loss.
std::shared_ptr<ctrainer::TensorDataset> make_ragged_sequences(int64_t n, uint64_t seed) {
  constexpr int64_t kLength = 8;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor ids = at::randint(1, 40, {n, kLength}, gen, at::kLong);
  const at::Tensor lengths = at::randint(2, kLength + 1, {n}, gen, at::kLong);
  const at::Tensor mask = at::arange(kLength, at::kLong).unsqueeze(0).lt(lengths.unsqueeze(1));
  ids = ids.masked_fill(mask.logical_not(), 0);
  return std::make_shared<ctrainer::TensorDataset>(
      std::map<std::string, at::Tensor>{{"input_ids", ids},
                                        {"attention_mask", mask.to(at::kLong)},
                                        {"labels", ids.masked_fill(mask.logical_not(), -100)}});
}

/// A tiny LM of `family` through the model registry: a causal LM (llama, gpt2) or an
/// encoder-decoder (t5, bart: the sequences are both its source and its labels).
std::shared_ptr<ctrainer::Model> make_tiny_lm(const std::string& family) {
  if (family == "t5")
    return ctrainer::AutoModel::from_config(
        *ctrainer::AutoConfig::from_json({{"model_type", "t5"},
                                          {"vocab_size", 40},
                                          {"d_model", 16},
                                          {"d_kv", 4},
                                          {"d_ff", 24},
                                          {"num_layers", 2},
                                          {"num_heads", 4},
                                          {"dropout_rate", 0.0},
                                          {"decoder_start_token_id", 0}},
                                         "tiny t5"),
        ctrainer::ModelTask::kSeq2SeqLM);
  if (family == "bart")
    return ctrainer::AutoModel::from_config(
        *ctrainer::AutoConfig::from_json({{"model_type", "bart"},
                                          {"vocab_size", 40},
                                          {"d_model", 16},
                                          {"encoder_layers", 2},
                                          {"decoder_layers", 2},
                                          {"encoder_attention_heads", 4},
                                          {"decoder_attention_heads", 4},
                                          {"encoder_ffn_dim", 24},
                                          {"decoder_ffn_dim", 24},
                                          {"max_position_embeddings", 16},
                                          {"dropout", 0.0},
                                          {"pad_token_id", 0}},
                                         "tiny bart"),
        ctrainer::ModelTask::kSeq2SeqLM);
  if (family != "llama" && family != "gpt2")
    throw ctrainer::ArgumentError("--causal_lm_family " + family + ": use llama, gpt2, t5 or bart");
  const auto config =
      ctrainer::AutoConfig::from_json(family == "llama" ? ctrainer::testing::tiny_llama_json()
                                                        : ctrainer::testing::tiny_gpt2_json(),
                                      "tiny " + family);
  return ctrainer::AutoModel::from_config(*config, ctrainer::ModelTask::kCausalLM);
}

ctrainer::Metrics accuracy(const ctrainer::EvalPrediction& p) {
  return {
      {"accuracy", p.predictions.argmax(-1).eq(p.label_ids).to(at::kDouble).mean().item<double>()}};
}

struct WorkerOptions {
  int64_t num_train_examples = 96;
  int64_t num_eval_examples = 37;  // not a multiple of 2 or 3: the eval sampler pads
  int64_t hidden_size = 16;
  double dropout = 0.0;
  std::string dump_dir;
  int64_t crash_at_step = 0;
  int64_t crash_rank = 1;
  std::string crash_mode = "exit";
  int64_t poison_at_step = 0;
  int64_t poison_rank = 1;
  bool loss_scaling = false;
  int64_t rank1_hidden_size = 0;
  double rank1_learning_rate = 0;
  bool causal_lm = false;
  std::string causal_lm_family = "llama";
  bool dump_params = true;

  void register_flags(ctrainer::ArgumentParser& parser) {
    parser.add_option("num_train_examples", &num_train_examples, "Training examples.");
    parser.add_option("num_eval_examples", &num_eval_examples, "Evaluation examples.");
    parser.add_option("hidden_size", &hidden_size, "Width of the hidden layer.");
    parser.add_option("dropout", &dropout, "Dropout before the classifier.");
    parser.add_option("dump_dir", &dump_dir, "Where each rank writes its results.");
    parser.add_option("crash_at_step", &crash_at_step, "Fail after this optimizer step.");
    parser.add_option("crash_rank", &crash_rank, "The rank that fails.");
    parser.add_option("crash_mode", &crash_mode,
                      "exit (code 7), kill (SIGKILL), hang, sigterm (a SIGTERM to this rank "
                      "only; the Trainer checkpoints and exits), or hang_in_step (stall at the "
                      "start of the next step's training_step, before its collectives).");
    parser.add_option("poison_at_step", &poison_at_step,
                      "Optimizer step whose gradient gets an inf.");
    parser.add_option("poison_rank", &poison_rank, "The only rank that sees the inf.");
    parser.add_option("loss_scaling", &loss_scaling, "Scale the loss (GradScaler defaults, fp32).");
    parser.add_option("rank1_hidden_size", &rank1_hidden_size, "Rank 1's hidden size (0: same).");
    parser.add_option("rank1_learning_rate", &rank1_learning_rate, "Rank 1's learning rate.");
    parser.add_option("causal_lm", &causal_lm, "Train a tiny causal LM on ragged token sequences.");
    parser.add_option("causal_lm_family", &causal_lm_family,
                      "llama, gpt2, t5 or bart (with --causal_lm).");
    parser.add_option("dump_params", &dump_params,
                      "With --causal_lm: write params.<rank>.txt (off for stage-3 sharding, "
                      "whose ranks hold shards; dump_dir/model/ has the saved model).");
  }
};

/// Fails on purpose after optimizer step `step` on one rank, on the first attempt only (a
/// restarted job must get through).
class CrashCallback : public TrainerCallback {
 public:
  CrashCallback(const WorkerOptions& options, const ctrainer::ProcessInfo& process)
      : options_(options), process_(process) {}
  std::string name() const override { return "CrashCallback"; }
  void on_step_end(Args, ctrainer::TrainerState& state, ctrainer::TrainerControl&, Ctx) override {
    if (state.global_step != options_.crash_at_step || process_.rank != options_.crash_rank ||
        process_.restart_count != 0 || options_.crash_mode == "hang_in_step")
      return;
    std::fprintf(stderr, "trainer_ddp_worker: rank %lld fails on purpose after step %lld (%s)\n",
                 static_cast<long long>(process_.rank), static_cast<long long>(state.global_step),
                 options_.crash_mode.c_str());
    if (options_.crash_mode == "kill") ::kill(::getpid(), SIGKILL);
    if (options_.crash_mode == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
    if (options_.crash_mode == "sigterm") {
      ::kill(::getpid(), SIGTERM);  // caught by the Trainer's SignalGuard
      return;
    }
    ::_exit(7);
  }

 private:
  WorkerOptions options_;
  ctrainer::ProcessInfo process_;
};

/// Records the loss scale after every optimizer step.
class ScaleRecorder : public TrainerCallback {
 public:
  explicit ScaleRecorder(Trainer** trainer) : trainer_(trainer) {}
  std::string name() const override { return "ScaleRecorder"; }
  void on_step_end(Args, ctrainer::TrainerState&, ctrainer::TrainerControl&, Ctx) override {
    if (const auto* scaler = (*trainer_)->precision().grad_scaler())
      scales.push_back(scaler->get_scale());
  }
  std::vector<double> scales;

 private:
  Trainer** trainer_;
};

/// After the synchronising backward of step `poison_at_step` (the gradients are already
/// all-reduced), puts an inf into one gradient on `poison_rank` only: the other ranks see
/// finite gradients, so only the all-reduced found-inf flag makes them skip too.
class PoisoningTrainer : public Trainer {
 public:
  PoisoningTrainer(std::shared_ptr<ctrainer::Model> model, ctrainer::TrainingArguments args,
                   ctrainer::TrainerComponents components, const WorkerOptions& options)
      : Trainer(std::move(model), std::move(args), std::move(components)), options_(options) {}
  at::Tensor training_step(ctrainer::Model& model, const ctrainer::Batch& inputs,
                           std::optional<int64_t> num_items_in_batch) override {
    if (options_.crash_mode == "hang_in_step" && options_.crash_at_step == state().global_step &&
        process().rank == options_.crash_rank && process().restart_count == 0) {
      // The others meet this step's collectives alone: ZeRO-3's all-gather in the forward,
      // ZeRO-2's reduce-scatter or DDP's all-reduce of the gradients in the backward.
      std::fprintf(stderr, "trainer_ddp_worker: rank %lld stalls in step %lld\n",
                   static_cast<long long>(process().rank),
                   static_cast<long long>(state().global_step + 1));
      std::this_thread::sleep_for(std::chrono::hours(1));
    }
    at::Tensor loss = Trainer::training_step(model, inputs, num_items_in_batch);
    if (options_.poison_at_step == state().global_step + 1 &&
        process().rank == options_.poison_rank && args().gradient_accumulation_steps == 1) {
      torch::NoGradGuard no_grad;
      model.parameters().front().mutable_grad().view({-1})[0] =
          std::numeric_limits<float>::infinity();
    }
    return loss;
  }

 private:
  WorkerOptions options_;
};

void write_json(const std::string& path, const nlohmann::json& value) {
  std::ofstream out(path);
  out << value.dump(2) << '\n';
}

/// --causal_lm: a tiny Llama or GPT-2 (rank 0's initialisation on every rank) trained on ragged
/// sequences.
int run_causal_lm(const ctrainer::TrainingArguments& args, const WorkerOptions& options) {
  const auto process = ctrainer::ProcessInfo::from_environment(args.local_rank);
  torch::manual_seed(100 + static_cast<uint64_t>(process.rank));
  auto model = make_tiny_lm(options.causal_lm_family);
  Trainer trainer(model, args,
                  {.train_dataset = make_ragged_sequences(options.num_train_examples, 5)});
  trainer.train();
  if (options.dump_dir.empty()) return 0;
  trainer.save_model(options.dump_dir + "/model");
  if (process.rank == 0) {  // what the saved folder holds, read back: any strategy's final model
    auto saved = make_tiny_lm(options.causal_lm_family);
    ctrainer::load_pretrained_weights(*saved, options.dump_dir + "/model",
                                      ctrainer::WeightLoadOptions{.strict = true});
    ctrainer::testing::write_parameters(*saved, options.dump_dir + "/saved_params.txt");
  }
  if (options.dump_params)
    ctrainer::testing::write_parameters(
        *model, options.dump_dir + "/params." + std::to_string(process.rank) + ".txt");
  return 0;
}

int run(ctrainer::TrainingArguments args, const WorkerOptions& options) {
  if (options.causal_lm) return run_causal_lm(args, options);
  const auto process = ctrainer::ProcessInfo::from_environment(args.local_rank);
  if (process.rank == 1 && options.rank1_learning_rate > 0)
    args.learning_rate = options.rank1_learning_rate;
  const int64_t hidden = process.rank == 1 && options.rank1_hidden_size > 0
                             ? options.rank1_hidden_size
                             : options.hidden_size;
  auto train = make_mixture(options.num_train_examples, 5);
  auto eval = make_mixture(options.num_eval_examples, 6);
  // A different initialisation per rank: the Trainer must start every rank from rank 0's.
  torch::manual_seed(100 + static_cast<uint64_t>(process.rank));
  auto model =
      std::make_shared<ctrainer::MLPClassifier>(kFeatures, hidden, kClasses, options.dropout, 1);
  Trainer* self = nullptr;
  auto scales = std::make_shared<ScaleRecorder>(&self);
  ctrainer::TrainerComponents components{.train_dataset = train,
                                         .eval_dataset = eval,
                                         .compute_metrics = accuracy,
                                         .callbacks = {scales}};
  if (options.crash_at_step > 0)
    components.callbacks.push_back(std::make_shared<CrashCallback>(options, process));
  if (options.loss_scaling)
    components.precision = std::make_shared<ctrainer::Precision>(
        ctrainer::PrecisionOptions{.loss_scaling = ctrainer::GradScalerOptions{}},
        c10::Device(c10::kCPU));
  PoisoningTrainer trainer(model, args, components, options);
  self = &trainer;
  if (args.do_train) trainer.train();
  const ctrainer::Metrics metrics = trainer.evaluate();
  const ctrainer::PredictionOutput prediction = trainer.predict(eval);

  if (!options.dump_dir.empty()) {
    const std::string rank = std::to_string(process.rank);
    ctrainer::testing::write_parameters(*model, options.dump_dir + "/params." + rank + ".txt");
    const at::Tensor predicted = prediction.predictions.argmax(-1).contiguous();
    const at::Tensor labels = prediction.label_ids.contiguous();
    nlohmann::json out = {
        {"metrics", nlohmann::json(metrics)},
        {"predictions", std::vector<int64_t>(predicted.data_ptr<int64_t>(),
                                             predicted.data_ptr<int64_t>() + predicted.numel())},
        {"labels", std::vector<int64_t>(labels.data_ptr<int64_t>(),
                                        labels.data_ptr<int64_t>() + labels.numel())},
        {"logits", std::vector<float>(prediction.predictions.contiguous().data_ptr<float>(),
                                      prediction.predictions.contiguous().data_ptr<float>() +
                                          prediction.predictions.numel())}};
    write_json(options.dump_dir + "/eval." + rank + ".json", out);
    std::ofstream scale_file(options.dump_dir + "/scale." + rank + ".txt");
    for (double s : scales->scales) scale_file << s << '\n';
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  WorkerOptions options;
  ctrainer::ArgumentParser parser("Trainer worker of the multi-process tests.");
  options.register_flags(parser);
  ctrainer::TrainingArguments args = ctrainer::parse_args_or_exit(parser, argc, argv);
  return ctrainer::run_reporting_errors([&] { return run(args, options); });
}
