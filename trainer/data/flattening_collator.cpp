#include <ctrainer/trainer/data/flattening_collator.h>

#include <stdexcept>
#include <string>

namespace ctrainer {

DataCollatorWithFlattening::DataCollatorWithFlattening(FlatteningCollatorOptions options)
    : options_(options) {}

Batch DataCollatorWithFlattening::operator()(const std::vector<Example>& examples) const {
  std::vector<at::Tensor> ids, labels, positions, sequence_index;
  for (const Example& example : examples) {
    if (!example.contains("input_ids"))
      throw std::invalid_argument("DataCollatorWithFlattening: an example lacks 'input_ids'");
    const at::Tensor input = example.at("input_ids").reshape({-1}).to(at::kLong);
    const int64_t length = input.size(0);
    if (length == 0) continue;
    // HF reads "labels" from the first example only and expects them in every one.
    at::Tensor target = examples.front().contains("labels")
                            ? example.at("labels").reshape({-1}).to(at::kLong).clone()
                            : input.clone();
    if (target.size(0) != length)
      throw std::invalid_argument("DataCollatorWithFlattening: an example's labels have " +
                                  std::to_string(target.size(0)) + " tokens and its input_ids " +
                                  std::to_string(length));
    target[0] = options_.separator_id;
    ids.push_back(input);
    labels.push_back(target);
    if (options_.return_position_ids)
      positions.push_back(
          at::arange(options_.position_ids_start, options_.position_ids_start + length, at::kLong));
    if (options_.return_seq_idx)
      sequence_index.push_back(at::full({length}, static_cast<int64_t>(ids.size()) - 1, at::kInt));
  }
  if (ids.empty())
    throw std::invalid_argument(
        "DataCollatorWithFlattening received a batch where every example is empty.");
  Batch batch;
  batch.set("input_ids", at::cat(ids).unsqueeze(0));
  batch.set("labels", at::cat(labels).unsqueeze(0));
  if (options_.return_position_ids) batch.set("position_ids", at::cat(positions).unsqueeze(0));
  if (options_.return_seq_idx) batch.set("seq_idx", at::cat(sequence_index).unsqueeze(0));
  return batch;
}

}  // namespace ctrainer
