#include <ctrainer/trainer/data/collator.h>

#include <stdexcept>

namespace ctrainer {

int64_t padding_value_for(const std::string& key, int64_t pad_token_id) {
  if (key == "input_ids") return pad_token_id;
  if (key == "special_tokens_mask") return 1;
  return 0;
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
