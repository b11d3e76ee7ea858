// transformers 5.24's vectorised GenerationMixin._beam_search, step for step and with the same
// tensor operations (its -1e9 penalties added in the same order, topk and sort on the same
// values), so that ties and scores come out as transformers' do. Shapes: B prompts, N beams,
// K = max(2, 1 + eos ids) * N candidates per prompt and step, V the vocabulary.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include <ATen/ATen.h>

#include <ctrainer/models/generation/decoding.h>

namespace ctrainer::generation {

namespace {

constexpr double kExcluded = -1.0e9;

at::Tensor flatten_beams(const at::Tensor& t) {  // [B, N, ...] -> [B * N, ...]
  auto shape = t.sizes().vec();
  shape[1] *= shape[0];
  shape.erase(shape.begin());
  return t.reshape(shape);
}

at::Tensor unflatten_beams(const at::Tensor& t, int64_t batch, int64_t beams) {
  auto shape = t.sizes().vec();
  shape[0] = beams;
  shape.insert(shape.begin(), batch);
  return t.reshape(shape);
}

/// transformers' _gather_beams: the beams `indices` [B, M] of `t` [B, N, ...].
at::Tensor gather_beams(const at::Tensor& t, at::Tensor indices) {
  while (indices.dim() < t.dim()) indices = indices.unsqueeze(-1);
  return at::take_along_dim(t, indices, 1);
}

/// early_stopping as transformers reads it: `is True`, or the string "never".
struct EarlyStopping {
  bool is_true = false;
  bool never = false;
};

EarlyStopping read_early_stopping(const GenerationConfig& config) {
  EarlyStopping e;
  const nlohmann::json& value = *config.early_stopping;
  e.is_true = value.is_boolean() && value.get<bool>();
  e.never = value.is_string() && value.get<std::string>() == "never";
  return e;
}

}  // namespace

GenerateOutput beam_search(CausalLanguageModel& model, const DecodingPlan& plan,
                           const LogitsProcessors& processors) {
  const int64_t beams = *plan.config.num_beams;
  const int64_t batch = plan.batch_size;
  const int64_t max_length = plan.max_length;
  const double length_penalty = *plan.config.length_penalty;
  const EarlyStopping early_stopping = read_early_stopping(plan.config);
  const bool do_sample = *plan.config.do_sample;
  const int64_t prompt_length = plan.input_ids.size(1);
  int64_t cur_len = prompt_length;
  const auto device = plan.input_ids.device();
  const auto long_options = at::TensorOptions().dtype(at::kLong).device(device);
  const auto float_options = at::TensorOptions().dtype(at::kFloat).device(device);
  const auto bool_options = at::TensorOptions().dtype(at::kBool).device(device);

  const int64_t eos_count = static_cast<int64_t>(plan.eos_token_ids.size());
  const int64_t keep = std::max<int64_t>(2, 1 + eos_count) * beams;
  const at::Tensor top_beams_mask =
      at::cat({at::ones({beams}, bool_options), at::zeros({keep - beams}, bool_options)});
  const at::Tensor eos =
      at::tensor(plan.eos_token_ids, at::TensorOptions().dtype(at::kLong)).to(device);
  // transformers: `pad_token_id or eos_token_id[0] if eos_token_id is not None else -1`, where a
  // pad id of 0 is falsy.
  int64_t fill = -1;
  if (eos_count > 0)
    fill = plan.pad_token_id && *plan.pad_token_id != 0 ? *plan.pad_token_id
                                                        : plan.eos_token_ids.front();

  at::Tensor running_sequences = at::full({batch, beams, max_length}, fill, long_options);
  running_sequences.narrow(2, 0, cur_len).copy_(unflatten_beams(plan.input_ids, batch, beams));
  at::Tensor sequences = running_sequences.clone();
  at::Tensor running_scores = at::zeros({batch, beams}, float_options);
  running_scores.narrow(1, 1, beams - 1).fill_(kExcluded);
  at::Tensor beam_scores = at::full({batch, beams}, kExcluded, float_options);
  at::Tensor is_sent_finished = at::zeros({batch, beams}, bool_options);
  at::Tensor improvement_possible = at::ones({batch, 1}, bool_options);
  at::Tensor hits_stop = at::zeros({batch, beams}, bool_options);
  at::Tensor running_beam_indices =
      at::full({batch, beams, max_length - cur_len}, -1, long_options.dtype(at::kInt));
  at::Tensor beam_indices = running_beam_indices.clone();

  DecoderSteps steps(model, plan);
  at::Tensor flat_running = plan.input_ids;
  bool first = true;
  while (true) {
    if (!first) flat_running = flatten_beams(running_sequences.narrow(2, 0, cur_len));
    first = false;
    const at::Tensor logits = steps.next_token_logits(flat_running);
    at::Tensor log_probs = processors(flat_running, at::log_softmax(logits, -1));
    log_probs = unflatten_beams(log_probs, batch, beams) + running_scores.unsqueeze(2);
    log_probs = log_probs.reshape({batch, -1});  // [B, N * V]

    // _get_top_k_continuations.
    at::Tensor top_log_probs, top_indices;
    if (do_sample) {
      top_indices =
          at::multinomial(at::softmax(log_probs, -1), keep, /*replacement=*/false, plan.generator);
      top_log_probs = log_probs.gather(1, top_indices);
      auto [sorted, order] = top_log_probs.sort(-1, /*descending=*/true);
      top_log_probs = sorted;
      top_indices = top_indices.gather(-1, order);
    } else {
      std::tie(top_log_probs, top_indices) = at::topk(log_probs, keep);
    }
    const int64_t vocab = log_probs.size(-1) / beams;
    const at::Tensor top_beam = top_indices.div(vocab, "floor");
    at::Tensor top_running_beam_indices = gather_beams(running_beam_indices, top_beam);
    at::Tensor top_running_sequences = gather_beams(running_sequences, top_beam);
    const at::Tensor top_ids = top_indices.remainder(vocab);
    top_running_sequences.select(2, cur_len).copy_(top_ids);
    const at::Tensor batch_offset = at::arange(batch, long_options).view({-1, 1}) * beams;
    top_running_beam_indices.select(2, cur_len - prompt_length).copy_(top_beam + batch_offset);

    // Stopping criteria on each candidate: max_length, or an eos as its new token.
    hits_stop = at::full({batch, keep}, cur_len + 1 >= max_length, bool_options);
    if (eos_count > 0) hits_stop = hits_stop.logical_or(at::isin(top_ids, eos));

    // _get_running_beams_for_next_iteration.
    const at::Tensor top_running_log_probs = top_log_probs + hits_stop.to(at::kFloat) * kExcluded;
    const at::Tensor next_running = std::get<1>(at::topk(top_running_log_probs, beams));
    running_sequences = gather_beams(top_running_sequences, next_running);
    running_scores = gather_beams(top_running_log_probs, next_running);
    running_beam_indices = gather_beams(top_running_beam_indices, next_running);

    // _update_finished_beams.
    const at::Tensor just_finished = hits_stop.logical_and(top_beams_mask.unsqueeze(0));
    at::Tensor finished_scores =
        top_log_probs / std::pow(static_cast<double>(cur_len + 1 - prompt_length), length_penalty);
    // `all(is_sent_finished) & (early_stopping is True)`.
    const at::Tensor batch_full = early_stopping.is_true
                                      ? is_sent_finished.all(-1, /*keepdim=*/true)
                                      : at::zeros({batch, 1}, bool_options);
    finished_scores = finished_scores + batch_full.to(at::kFloat) * kExcluded;
    finished_scores =
        finished_scores + improvement_possible.logical_not().to(at::kFloat) * kExcluded;
    finished_scores = finished_scores + just_finished.logical_not().to(at::kFloat) * kExcluded;
    const at::Tensor merged_indices =
        std::get<1>(at::topk(at::cat({beam_scores, finished_scores}, 1), beams));
    sequences = gather_beams(at::cat({sequences, top_running_sequences}, 1), merged_indices);
    beam_scores = gather_beams(at::cat({beam_scores, finished_scores}, 1), merged_indices);
    beam_indices =
        gather_beams(at::cat({beam_indices, top_running_beam_indices}, 1), merged_indices);
    is_sent_finished = gather_beams(at::cat({is_sent_finished, just_finished}, 1), merged_indices);

    // The cache follows the beams that go on.
    steps.select_rows(
        flatten_beams(running_beam_indices.select(2, cur_len - prompt_length)).to(at::kLong));
    cur_len += 1;

    // _check_early_stop_heuristic.
    const int64_t best_length =
        (early_stopping.never && length_penalty > 0.0 ? max_length : cur_len) - prompt_length;
    const at::Tensor best_running =
        running_scores.narrow(1, 0, 1) / std::pow(static_cast<double>(best_length), length_penalty);
    const at::Tensor worst_finished =
        at::where(is_sent_finished, std::get<0>(beam_scores.min(1, /*keepdim=*/true)),
                  at::scalar_tensor(kExcluded, float_options));
    improvement_possible =
        improvement_possible.logical_and((best_running > worst_finished).any(-1, /*keepdim=*/true));

    // _beam_search_has_unfinished_sequences.
    const bool any_improvement = improvement_possible.any().item<bool>();
    const bool open_beam = !(is_sent_finished.all().item<bool>() && early_stopping.is_true);
    const bool valid_continuations = !hits_stop.all().item<bool>();
    if (!(any_improvement && open_beam && valid_continuations)) break;
  }

  const int64_t returned = *plan.config.num_return_sequences;
  sequences = flatten_beams(sequences.narrow(1, 0, returned));
  beam_scores = flatten_beams(beam_scores.narrow(1, 0, returned));
  beam_indices = flatten_beams(beam_indices.narrow(1, 0, returned));
  const int64_t generated = beam_indices.add(1).to(at::kBool).sum(1).max().item<int64_t>();
  return {sequences.narrow(1, 0, prompt_length + generated).contiguous(), beam_scores};
}

}  // namespace ctrainer::generation
