#include <ctrainer/trainer/data/collator.h>

#include <stdexcept>

#include <ATen/ATen.h>

namespace ctrainer {

int64_t padding_value_for(const std::string& key, int64_t pad_token_id) {
  if (key == "input_ids") return pad_token_id;
  if (key == "special_tokens_mask") return 1;
  return 0;
}

at::Tensor pad_sequences(const std::vector<at::Tensor>& rows, int64_t length, int64_t value,
                         bool left) {
  std::vector<int64_t> shape{static_cast<int64_t>(rows.size()), length};
  for (int64_t d = 1; d < rows.front().dim(); ++d) shape.push_back(rows.front().size(d));
  at::Tensor out = at::full(shape, value, rows.front().options());
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t n = rows[i].size(0);
    out[static_cast<int64_t>(i)].narrow(0, left ? length - n : 0, n).copy_(rows[i]);
  }
  return out;
}

Batch DefaultDataCollator::operator()(const std::vector<Example>& examples) const {
  Batch batch;
  if (examples.empty()) return batch;
  for (const auto& key : examples.front().keys()) {
    std::vector<at::Tensor> parts;
    parts.reserve(examples.size());
    for (const auto& ex : examples) {
      if (!ex.contains(key))
        throw std::invalid_argument("DefaultDataCollator: an example lacks key '" + key + "'");
      const auto& t = ex.at(key);
      if (!parts.empty() && parts.front().sizes() != t.sizes())
        throw std::invalid_argument("DefaultDataCollator: key '" + key +
                                    "' has different shapes across examples; use a padding "
                                    "collator");
      parts.push_back(t);
    }
    batch.set(key, at::stack(parts));
  }
  return batch;
}

}  // namespace ctrainer
