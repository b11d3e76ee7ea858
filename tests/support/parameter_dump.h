#pragma once
// Writing a model's parameters in the text format of parameter_text.h (for test workers).
#include <cstdio>
#include <fstream>
#include <string>

#include <ATen/ATen.h>

#include <ctrainer/models/model.h>

namespace ctrainer::testing {

/// One line per parameter: its name, then every value as a hex float (exact).
inline void write_parameters(const Model& model, const std::string& path) {
  std::ofstream out(path);
  for (const auto& item : model.named_parameters()) {
    const at::Tensor values = item.value().detach().to(at::kFloat).contiguous().view(-1).cpu();
    const float* data = values.data_ptr<float>();
    out << item.key();
    char text[64];
    for (int64_t i = 0; i < values.numel(); ++i) {
      std::snprintf(text, sizeof text, " %a", static_cast<double>(data[i]));
      out << text;
    }
    out << '\n';
  }
}

}  // namespace ctrainer::testing
