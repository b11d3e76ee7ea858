#include <ctrainer/trainer/loss/loss_items.h>

namespace ctrainer {

int64_t count_label_tokens(const std::vector<Batch>& window, bool shifts_labels) {
  constexpr int64_t kIgnoreIndex = -100;
  int64_t count = 0;
  for (const Batch& batch : window) {
    if (!batch.contains("labels")) continue;
    at::Tensor labels = batch.at("labels");
    if (batch.contains("shift_labels")) {
      labels = batch.at("shift_labels");  // already shifted by the collator: as they are (HF)
    } else if (shifts_labels && labels.dim() > 0 && labels.size(-1) > 0) {
      labels = labels.narrow(-1, 1, labels.size(-1) - 1);
    }
    count += labels.ne(kIgnoreIndex).sum().item<int64_t>();
  }
  return count;
}

}  // namespace ctrainer
