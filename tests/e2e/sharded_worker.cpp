// A worker for the sharded-strategy tests, run by ctrainer-run: every rank trains the same tiny
// BERT classifier (rank 0's weights, broadcast by setup) on its share of a fixed global batch
// with DDP or ZeRO-1/2/3, AdamW and gradient clipping, then writes the full final parameters as
// hex floats to OUT/params.RANK.txt (ZeRO-3 gathers them first) and, on rank 0, one line per
// step "step K: loss L grad norm G" and "memory: parameters P gradients G master M
// optimizer_state S psi N padded Q" (bytes this rank holds after the last step; psi = trainable
// parameters, padded = the sum of the segments' padded sizes).
// Exit code 0 on success, 3 on an error (the message goes to stderr).
//   --out DIR --strategy ddp|zero1|zero2|zero3 --accum A --steps K --offload 0|1
//   --wrap CLASS (ZeRO-3 unit class; "" = root only) --prefetch none|pre|post
//   --forward-prefetch 0|1 --bucket ELEMENTS --overlap 0|1 --checkpointing 0|1
//   --persistence ELEMENTS (stage3_param_persistence_threshold)
//   --hybrid 0|1 (HYBRID_SHARD: shard per node, replicate across nodes)
//   --loss-scale 0|1   fp16-style dynamic loss scaling (GradScaler, torch policy, 2^16, growth
//                      every 2 clean steps): unscaled on this rank's shards, overflow agreed by
//                      all ranks, an overflowing step skipped (its grad norm printed as -1)
//   --overflow-step S  rank 0 makes one gradient element overflow in step S (a term
//                      1e38 x classifier.bias[0] in its loss; the printed loss omits it)
//   --param-dtype float32|bf16  bf16: DeepSpeed's bf16 mode (16-bit model, fp32 master shards);
//                      with --strategy manual: one process keeping fp32 masters by hand (the
//                      reference)
//   --timeout SECONDS  collective timeout (default 60)
//   --fail-rank R --fail-step S --fail-mode kill|hang  rank R SIGKILLs itself (or sleeps for
//                      an hour) in step S between its first forward and backward, while its
//                      peers are inside the step's collectives
//   --dropout P (hidden dropout, default 0.1)
//   --load DIR  load the sharded state (any world size) before training
//   --save DIR  save the sharded state after the last step (every rank writes its files)
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include <torch/optim/adamw.h>

#include <ctrainer/distributed/ddp_strategy.h>
#include <ctrainer/distributed/process_group.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/distributed/sharded_state.h>
#include <ctrainer/distributed/sharded_strategy.h>
#include <ctrainer/distributed/strategy.h>
#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/trainer/precision/grad_scaler.h>

#include "support/parameter_dump.h"

namespace {

constexpr int64_t kGlobalBatch = 12;
constexpr int64_t kSequence = 6;
constexpr double kMaxNorm = 0.05;  // below the norms: clipping is active

ctrainer::BertConfig tiny_config(double dropout) {
  ctrainer::BertConfig config;
  config.vocab_size = 37;  // odd sizes: segments do not divide by 2 or 3 without padding
  config.hidden_size = 16;
  config.num_hidden_layers = 3;
  config.num_attention_heads = 2;
  config.intermediate_size = 24;
  config.max_position_embeddings = 16;
  config.hidden_dropout_prob = dropout;  // on by default: every path must draw the same masks
  config.attention_probs_dropout_prob = 0.0;
  config.set_num_labels(3);
  return config;
}

struct Flags {
  std::string out = ".";
  std::string strategy = "ddp";
  int64_t accum = 1, steps = 3;
  ctrainer::ShardingOptions sharding;
  bool checkpointing = false;
  double dropout = 0.1;
  std::string load, save;
  int64_t timeout_seconds = 60;
  bool loss_scale = false;
  int64_t overflow_step = -1;
  int64_t fail_rank = -1, fail_step = -1;
  std::string fail_mode = "kill";
};

Flags parse(int argc, char** argv) {
  Flags f;
  f.sharding.reduce_bucket_elements = 700;  // several buckets for this ~10k-parameter model
  f.sharding.wrap_layer_classes = {"BertLayer"};
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string flag = argv[i];
    const std::string value = argv[++i];
    if (flag == "--out")
      f.out = value;
    else if (flag == "--strategy")
      f.strategy = value;
    else if (flag == "--accum")
      f.accum = std::stoll(value);
    else if (flag == "--steps")
      f.steps = std::stoll(value);
    else if (flag == "--offload")
      f.sharding.offload_optimizer = f.sharding.offload_params = value == "1";
    else if (flag == "--wrap")
      f.sharding.wrap_layer_classes =
          value.empty() ? std::vector<std::string>{} : std::vector<std::string>{value};
    else if (flag == "--prefetch")
      f.sharding.backward_prefetch = value == "none"   ? ctrainer::BackwardPrefetch::kNone
                                     : value == "post" ? ctrainer::BackwardPrefetch::kBackwardPost
                                                       : ctrainer::BackwardPrefetch::kBackwardPre;
    else if (flag == "--forward-prefetch")
      f.sharding.forward_prefetch = value == "1";
    else if (flag == "--bucket")
      f.sharding.reduce_bucket_elements = std::stoll(value);
    else if (flag == "--overlap")
      f.sharding.overlap_comm = value == "1";
    else if (flag == "--checkpointing")
      f.checkpointing = value == "1";
    else if (flag == "--persistence")
      f.sharding.param_persistence_threshold = std::stoll(value);
    else if (flag == "--dropout")
      f.dropout = std::stod(value);
    else if (flag == "--loss-scale")
      f.loss_scale = value == "1";
    else if (flag == "--overflow-step")
      f.overflow_step = std::stoll(value);
    else if (flag == "--param-dtype")
      f.sharding.parameter_dtype = value == "bf16" ? at::kBFloat16 : at::kFloat;
    else if (flag == "--timeout")
      f.timeout_seconds = std::stoll(value);
    else if (flag == "--fail-rank")
      f.fail_rank = std::stoll(value);
    else if (flag == "--fail-step")
      f.fail_step = std::stoll(value);
    else if (flag == "--fail-mode")
      f.fail_mode = value;
    else if (flag == "--hybrid")
      f.sharding.hybrid = value == "1";
    else if (flag == "--load")
      f.load = value;
    else if (flag == "--save")
      f.save = value;
    else
      throw std::runtime_error("unknown flag " + flag);
  }
  if (f.strategy == "zero1")
    f.sharding.stage = ctrainer::ShardingStage::kOptimizerState;
  else if (f.strategy == "zero2")
    f.sharding.stage = ctrainer::ShardingStage::kGradients;
  else if (f.strategy == "zero3")
    f.sharding.stage = ctrainer::ShardingStage::kParameters;
  else if (f.strategy != "ddp" && f.strategy != "manual")
    throw std::runtime_error("unknown strategy " + f.strategy);
  if (f.strategy == "ddp" && f.sharding.parameter_dtype != at::kFloat)
    throw std::runtime_error("DDP keeps no fp32 master: use --strategy manual as the reference");
  if (f.strategy != "zero3") f.sharding.offload_params = false;
  return f;
}

/// The reference for 16-bit parameters, on one process: fp32 master copies kept by hand, as
/// DeepSpeed's bf16/fp16 optimizers keep them. Each backward's 16-bit gradients are added to
/// the masters' fp32 gradients, clipping uses their norm, the optimizer steps the masters and
/// the parameters take the rounded values.
class ManualMasterStrategy : public ctrainer::SingleDeviceStrategy {
 public:
  explicit ManualMasterStrategy(at::ScalarType dtype) : dtype_(dtype) {}
  void setup(torch::nn::Module& model, const c10::Device& device) override {
    model.to(device);
    at::NoGradGuard no_grad;
    for (auto& p : model.parameters())
      if (p.is_floating_point()) p.set_data(p.data().to(dtype_));
    for (auto& b : model.buffers())
      if (b.is_floating_point()) b.set_data(b.data().to(dtype_));
    for (auto& p : model.parameters()) {
      if (!p.requires_grad()) continue;
      params_.push_back(p);
      masters_.push_back(p.detach().to(at::kFloat).clone());
      masters_.back().mutable_grad() = at::zeros_like(masters_.back());
    }
  }
  void setup_optimizer(torch::optim::Optimizer& optimizer) override {
    for (auto& group : optimizer.param_groups())
      for (auto& p : group.params())
        for (std::size_t k = 0; k < params_.size(); ++k)
          if (params_[k].unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) p = masters_[k];
  }
  std::vector<at::Tensor> optimizer_parameters(torch::nn::Module& /*model*/) override {
    return masters_;
  }
  void backward(const at::Tensor& loss, bool /*sync*/) override {
    loss.backward();
    at::NoGradGuard no_grad;
    for (std::size_t k = 0; k < params_.size(); ++k) {
      if (params_[k].grad().defined())
        masters_[k].mutable_grad().add_(params_[k].grad().to(at::kFloat));
      params_[k].mutable_grad().reset();
    }
  }
  at::Tensor clip_grad_norm(torch::nn::Module& /*model*/, double max_norm) override {
    at::Tensor sum = at::zeros({}, at::kFloat);
    for (const auto& m : masters_) sum += at::dot(m.grad().view(-1), m.grad().view(-1));
    const at::Tensor norm = sum.sqrt();
    const at::Tensor factor = at::clamp_max(max_norm / (norm + 1e-6), 1.0);
    for (auto& m : masters_) m.mutable_grad().mul_(factor);
    return norm;
  }
  void optimizer_step(torch::optim::Optimizer& optimizer) override {
    optimizer.step();
    at::NoGradGuard no_grad;
    for (std::size_t k = 0; k < params_.size(); ++k) params_[k].copy_(masters_[k]);
  }
  void zero_grad(torch::nn::Module& /*model*/) override {
    for (auto& m : masters_) m.mutable_grad().zero_();
  }

 private:
  at::ScalarType dtype_;
  std::vector<at::Tensor> params_, masters_;
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  try {
    const Flags flags = parse(argc, argv);
    const auto info = ctrainer::ProcessInfo::from_environment();
    ctrainer::ProcessGroupOptions options;
    options.timeout = std::chrono::seconds(flags.timeout_seconds);
    ctrainer::ProcessGroup group(info, options);
    const int64_t world = info.world_size;
    if (kGlobalBatch % (world * flags.accum) != 0)
      throw std::runtime_error("the global batch of 12 does not split into world x accum");

    torch::manual_seed(7);
    const at::Tensor ids = torch::randint(1, 37, {kGlobalBatch, kSequence}, at::kLong);
    const at::Tensor labels = torch::arange(kGlobalBatch, at::kLong).remainder(3);

    // A different seed per rank: setup() must make every rank start from rank 0's weights.
    torch::manual_seed(42 + static_cast<uint64_t>(info.rank));
    auto model =
        std::make_shared<ctrainer::BertForSequenceClassification>(tiny_config(flags.dropout));
    model->train();
    if (flags.checkpointing) model->gradient_checkpointing_enable(true);
    std::unique_ptr<ctrainer::Strategy> strategy;
    ctrainer::ShardedStrategy* sharded = nullptr;
    if (flags.strategy == "manual") {
      if (world != 1) throw std::runtime_error("--strategy manual runs on one process");
      strategy = std::make_unique<ManualMasterStrategy>(flags.sharding.parameter_dtype);
    } else if (flags.strategy == "ddp") {
      ctrainer::DDPOptions ddp;
      ddp.bucket_cap_mb = ddp.first_bucket_mb = 700.0 * 4 / (1024 * 1024);
      strategy = std::make_unique<ctrainer::DDPStrategy>(group, ddp);
    } else {
      auto owned = std::make_unique<ctrainer::ShardedStrategy>(group, flags.sharding);
      sharded = owned.get();
      strategy = std::move(owned);
    }
    strategy->setup(*model, c10::Device(c10::kCPU));
    // HF's two groups: weight decay on the weights only.
    std::vector<at::Tensor> decay, no_decay;
    for (const auto& item : model->named_parameters())
      (item.key().find("bias") != std::string::npos ||
               item.key().find("LayerNorm") != std::string::npos
           ? no_decay
           : decay)
          .push_back(item.value());
    torch::optim::AdamW optimizer(
        {torch::optim::OptimizerParamGroup(decay,
                                           std::make_unique<torch::optim::AdamWOptions>(
                                               torch::optim::AdamWOptions(1e-2).weight_decay(0.1))),
         torch::optim::OptimizerParamGroup(
             no_decay, std::make_unique<torch::optim::AdamWOptions>(
                           torch::optim::AdamWOptions(1e-2).weight_decay(0.0)))},
        torch::optim::AdamWOptions(1e-2));
    strategy->setup_optimizer(optimizer);
    if (!flags.load.empty()) {
      if (!sharded) throw std::runtime_error("--load needs a sharded strategy");
      ctrainer::load_sharded_state(*sharded, optimizer, flags.load);
    }

    std::optional<ctrainer::GradScaler> scaler;
    if (flags.loss_scale) {
      ctrainer::GradScalerOptions scaling;
      scaling.growth_interval = 2;
      scaler.emplace(scaling);
    }
    at::Tensor poisoned;  // the parameter whose gradient overflows in --overflow-step
    for (const auto& item : model->named_parameters())
      if (item.key() == "classifier.bias") poisoned = item.value();

    // Each rank draws different dropout masks, but the same ones under every strategy.
    torch::manual_seed(1000 + static_cast<uint64_t>(info.rank));
    const int64_t shard = kGlobalBatch / world, micro = shard / flags.accum;
    for (int64_t step = 0; step < flags.steps; ++step) {
      at::Tensor step_loss = at::zeros({});
      for (int64_t m = 0; m < flags.accum; ++m) {
        const int64_t begin = info.rank * shard + m * micro;
        ctrainer::Batch batch{{"input_ids", ids.narrow(0, begin, micro)},
                              {"labels", labels.narrow(0, begin, micro)}};
        strategy->before_forward(*model);
        const at::Tensor loss = model->forward(batch).loss / static_cast<double>(flags.accum);
        if (step == flags.fail_step && m == 0 && info.rank == flags.fail_rank) {
          std::fprintf(stderr, "rank %lld: failing (%s) in step %lld\n",
                       static_cast<long long>(info.rank), flags.fail_mode.c_str(),
                       static_cast<long long>(step));
          if (flags.fail_mode == "kill") ::kill(::getpid(), SIGKILL);
          std::this_thread::sleep_for(std::chrono::hours(1));
        }
        step_loss += loss.detach();
        at::Tensor objective = loss;
        if (step == flags.overflow_step && m == 0 && info.rank == 0)
          objective = objective + poisoned.flatten()[0] * 1e38;  // x 2^16: inf in fp32
        strategy->backward(scaler ? scaler->scale(objective) : objective,
                           /*sync=*/m == flags.accum - 1);
      }
      // As Trainer::apply_accumulated_gradients: unscale, agree on overflow, clip, step.
      bool skip = false;
      if (scaler) {
        const at::Tensor found = strategy->any_across_processes(
            scaler->unscale_(strategy->optimizer_parameters(*model)));
        skip = found.item<float>() != 0;
        scaler->update(found);
      }
      const at::Tensor norm = strategy->clip_grad_norm(*model, kMaxNorm);
      if (!skip) strategy->optimizer_step(optimizer);
      strategy->zero_grad(*model);
      const at::Tensor mean = strategy->mean_across_processes(step_loss);
      if (info.rank == 0)
        std::printf("step %lld: loss %.8f grad norm %.8f%s\n", static_cast<long long>(step),
                    mean.item<double>(), skip ? -1.0 : norm.item<double>(),
                    scaler ? (" scale " + std::to_string(scaler->get_scale())).c_str() : "");
    }
    if (sharded && info.rank == 0) {
      const ctrainer::ShardedMemory memory = sharded->memory(&optimizer);
      int64_t psi = 0, padded = 0;
      for (const auto& segment : sharded->segments()) {
        psi += segment->layout().numel;
        padded += segment->layout().padded_numel();
      }
      std::printf(
          "memory: parameters %lld gradients %lld master %lld optimizer_state %lld psi %lld "
          "padded %lld segments %zu\n",
          static_cast<long long>(memory.parameters), static_cast<long long>(memory.gradients),
          static_cast<long long>(memory.master), static_cast<long long>(memory.optimizer_state),
          static_cast<long long>(psi), static_cast<long long>(padded), sharded->segments().size());
    }
    if (!flags.save.empty()) {
      if (!sharded) throw std::runtime_error("--save needs a sharded strategy");
      // HYBRID_SHARD: the other nodes hold copies of node 0's shards.
      if (sharded->replica_index() == 0)
        ctrainer::save_sharded_state(*sharded, optimizer, flags.save, sharded->shard_rank());
      group.barrier();
    }
    strategy->gather_full_parameters(*model);
    ctrainer::testing::write_parameters(
        *model, flags.out + "/params." + std::to_string(info.rank) + ".txt");
    strategy->release_full_parameters(*model);
    strategy.reset();
    group.shutdown();
    std::printf("rank %lld of %lld: done\n", static_cast<long long>(info.rank),
                static_cast<long long>(world));
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "sharded_worker: %s\n", error.what());
    return 3;
  }
}
