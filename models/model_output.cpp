// ModelOutput's named access (models/model.h).
#include <ctrainer/models/model.h>

#include <stdexcept>

namespace ctrainer {

bool ModelOutput::contains(const std::string& name) const {
  if (name == "loss") return loss.defined();
  if (name == "logits") return logits.defined();
  auto it = tensors.find(name);
  return it != tensors.end() && it->second.defined();
}

const at::Tensor& ModelOutput::at(const std::string& name) const {
  if (contains(name)) {
    if (name == "loss") return loss;
    if (name == "logits") return logits;
    return tensors.at(name);
  }
  std::string known;
  for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
  throw std::out_of_range("the model's output has no '" + name +
                          "' (it has: " + (known.empty() ? "nothing" : known) + ")");
}

std::vector<std::string> ModelOutput::names() const {
  std::vector<std::string> out;
  if (loss.defined()) out.emplace_back("loss");
  if (logits.defined()) out.emplace_back("logits");
  for (const auto& [name, tensor] : tensors)
    if (tensor.defined()) out.push_back(name);
  return out;
}

}  // namespace ctrainer
