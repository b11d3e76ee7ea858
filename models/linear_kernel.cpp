#include <ctrainer/models/linear_kernel.h>

#include <cstdlib>
#include <string>

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

// mkldnn::_linear_pointwise(Tensor X, Tensor W, Tensor? B, str attr, Scalar?[] scalars,
// str? algorithm): X Wᵀ + B through oneDNN, with attr "none" (no fused activation). It makes X
// contiguous itself and takes W with any strides (slowly, see onednn_linear_copies_weight). Looked
// up once; a libtorch built without oneDNN has no such op, and then every product goes through
// at::linear.
using PointwiseLinear = at::Tensor(const at::Tensor&, const at::Tensor&,
                                   const std::optional<at::Tensor>&, std::string_view,
                                   c10::List<std::optional<at::Scalar>>,
                                   std::optional<std::string_view>);

const c10::TypedOperatorHandle<PointwiseLinear>* onednn_linear_op() {
  static const auto handle = []() -> std::optional<c10::TypedOperatorHandle<PointwiseLinear>> {
    auto op = c10::Dispatcher::singleton().findSchema({"mkldnn::_linear_pointwise", ""});
    if (!op) return std::nullopt;
    return op->typed<PointwiseLinear>();
  }();
  return handle ? &*handle : nullptr;
}

at::Tensor onednn_linear(const at::Tensor& input, const at::Tensor& weight,
                         const std::optional<at::Tensor>& bias) {
  return onednn_linear_op()->call(
      input, onednn_linear_copies_weight(weight) ? weight.contiguous() : weight, bias, "none",
      c10::List<std::optional<at::Scalar>>(), std::nullopt);
}

// `grad` with `weight`'s strides when the weight is contiguous or the transpose of a contiguous
// tensor. AccumulateGrad copies a gradient whose strides differ from its parameter's anyway, and
// before it, a tied weight's two gradients (the LM head's and the embedding's) add up several times
// slower when one is transposed: GPT-2 124M's 50257 × 768 sum took 129 ms, and under 9 ms alike.
at::Tensor in_layout_of(const at::Tensor& weight, const at::Tensor& grad) {
  if (grad.strides() == weight.strides()) return grad;
  if (weight.is_contiguous()) return grad.contiguous();
  if (weight.t().is_contiguous()) return grad.t().contiguous().t();
  return grad;
}

// The autograd of y = x Wᵀ + b with every product through oneDNN: dx = dy W, dW = dyᵀ x,
// db = Σ dy. Saves what at::linear's autograd saves (x and W), so memory is unchanged.
struct OneDnnLinearFunction : torch::autograd::Function<OneDnnLinearFunction> {
  // Two overloads: Function::apply takes only defined tensors, so a Linear without a bias
  // has an input fewer (and backward returns a gradient fewer).
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                            const at::Tensor& weight) {
    ctx->save_for_backward({input, weight});
    ctx->saved_data["has_bias"] = false;
    return onednn_linear(input, weight, std::nullopt);
  }
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                            const at::Tensor& weight, const at::Tensor& bias) {
    ctx->save_for_backward({input, weight});
    ctx->saved_data["has_bias"] = true;
    return onednn_linear(input, weight, bias);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor grad = grad_outputs[0].reshape({-1, weight.size(0)});
    at::Tensor grad_input, grad_weight, grad_bias;
    if (ctx->needs_input_grad(0)) {
      grad_input = onednn_linear(grad, weight.t(), std::nullopt).view(input.sizes());
    }
    if (ctx->needs_input_grad(1)) {
      // The op copies its first operand into contiguous rows, and a transposing copy is slow
      // (dyᵀ of 2048 × 8192 took 40 ms, as long as the product): with many rows and more
      // outputs than inputs, dW = (xᵀ dy)ᵀ transposes x, the smaller one. With few rows (a
      // product over a handful of tokens) that form's inner dimension is the row count, which
      // oneDNN runs several times slower, and dyᵀ is cheap to copy: dW = dyᵀ x.
      const at::Tensor input_rows = input.reshape({-1, weight.size(1)});
      const bool transpose_input = weight.size(0) > weight.size(1) && input_rows.size(0) >= 256;
      if (transpose_input && weight.is_contiguous() &&
          weight.numel() >= kBlasWeightGradientMinElements) {
        // A large contiguous weight (a tied LM head's vocabulary × hidden embedding): (xᵀ dy)ᵀ
        // comes out transposed and would be copied into the weight's layout, across a page per
        // row (GPT-2 124M's 50257 × 768: 153 ms in a 5.3 s step on the Zen 4 build machine),
        // and dyᵀ x would copy dyᵀ, larger still. BLAS reads dyᵀ in place and writes dW in
        // the weight's layout: 400 ms against oneDNN's 423 ms product and that copy.
        grad_weight = at::mm(grad.t(), input_rows);
      } else {
        grad_weight = transpose_input ? onednn_linear(input_rows.t(), grad.t(), std::nullopt).t()
                                      : onednn_linear(grad.t(), input_rows.t(), std::nullopt);
        grad_weight = in_layout_of(weight, grad_weight);
      }
    }
    if (!ctx->saved_data["has_bias"].toBool()) return {grad_input, grad_weight};
    if (ctx->needs_input_grad(2)) grad_bias = grad.sum(0);
    return {grad_input, grad_weight, grad_bias};
  }
};

bool is_fp32_cpu(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat &&
         t.layout() == at::kStrided;
}

}  // namespace

bool onednn_linear_copies_weight(const at::Tensor& weight) {
  return weight.dim() == 2 && !weight.is_contiguous() && !weight.t().is_contiguous();
}

LinearKernel parse_cpu_linear_preference(const char* value) {
  const std::string text = value ? value : "";
  if (text.empty() || text == "onednn") return LinearKernel::kOneDnn;
  if (text == "aten") return LinearKernel::kAten;
  throw ArgumentError("environment variable CTRAINER_CPU_LINEAR='" + text +
                      "' is not a CPU linear kernel: set it to 'onednn' (the default: oneDNN's "
                      "matmul) or 'aten' (at::linear), or unset it");
}

LinearKernel cpu_linear_preference() {
  static const LinearKernel preference =
      parse_cpu_linear_preference(std::getenv("CTRAINER_CPU_LINEAR"));
  return preference;
}

LinearKernel linear_kernel_for(const at::Tensor& input, const at::Tensor& weight) {
  const bool onednn = is_fp32_cpu(input) && is_fp32_cpu(weight) && input.dim() >= 2 &&
                      weight.dim() == 2 && input.numel() > 0 && weight.numel() > 0 &&
                      !at::autocast::is_autocast_enabled(at::kCPU) &&
                      at::globalContext().userEnabledMkldnn() && onednn_linear_op() != nullptr &&
                      cpu_linear_preference() == LinearKernel::kOneDnn;
  return onednn ? LinearKernel::kOneDnn : LinearKernel::kAten;
}

at::Tensor linear(const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias) {
  const bool has_bias = bias && bias->defined();
  if (linear_kernel_for(input, weight) == LinearKernel::kAten ||
      (has_bias && !(is_fp32_cpu(*bias) && bias->dim() == 1))) {
    return at::linear(input, weight, bias);
  }
  const bool needs_graph =
      at::GradMode::is_enabled() &&
      (input.requires_grad() || weight.requires_grad() || (has_bias && bias->requires_grad()));
  if (!needs_graph) return onednn_linear(input, weight, has_bias ? bias : std::nullopt);
  return has_bias ? OneDnnLinearFunction::apply(input, weight, *bias)
                  : OneDnnLinearFunction::apply(input, weight);
}

}  // namespace ctrainer
