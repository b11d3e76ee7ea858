// ctrainer::linear: which kernel runs (oneDNN for fp32 CPU products, at::linear for other dtypes,
// under CPU autocast and when CTRAINER_CPU_LINEAR=aten), its values and gradients against an fp64
// reference for the weight layouts models pass (GPT-2's Conv1D transposed, views into wider
// tensors, which are copied first), and the model layers that must go through it.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <torch/torch.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/gpt2/gpt2_model.h>
#include <ctrainer/models/linear_kernel.h>

namespace ctrainer {
namespace linear_kernel_test {

bool onednn_available() {
  return linear_kernel_for(torch::ones({2, 2}), torch::ones({2, 2})) == LinearKernel::kOneDnn;
}

// max |a - b| / max |b|: the fp32 products' error against the fp64 reference.
double relative_error(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b).abs().max().item<double>() / b.abs().max().item<double>();
}

TEST(LinearKernel, Fp32CpuProductsRunOnOneDnnWhenLibtorchHasIt) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "this libtorch has no oneDNN";
  EXPECT_EQ(linear_kernel_for(torch::ones({4, 8}), torch::ones({3, 8})), LinearKernel::kOneDnn);
  EXPECT_EQ(linear_kernel_for(torch::ones({2, 4, 8}), torch::ones({8, 3}).t()),
            LinearKernel::kOneDnn);
}

TEST(LinearKernel, OtherDtypesShapesAndAutocastStayOnAten) {
  const auto f64 = torch::TensorOptions().dtype(at::kDouble);
  const auto bf16 = torch::TensorOptions().dtype(at::kBFloat16);
  EXPECT_EQ(linear_kernel_for(torch::ones({4, 8}, f64), torch::ones({3, 8}, f64)),
            LinearKernel::kAten);
  EXPECT_EQ(linear_kernel_for(torch::ones({4, 8}, bf16), torch::ones({3, 8}, bf16)),
            LinearKernel::kAten);
  EXPECT_EQ(linear_kernel_for(torch::ones({8}), torch::ones({3, 8})), LinearKernel::kAten);
  EXPECT_EQ(linear_kernel_for(torch::ones({0, 8}), torch::ones({3, 8})), LinearKernel::kAten);
  {
    // CPU autocast casts inside at::linear: a product that bypassed it would stay in fp32.
    at::autocast::set_autocast_enabled(at::kCPU, true);
    const LinearKernel under_autocast = linear_kernel_for(torch::ones({4, 8}), torch::ones({3, 8}));
    at::autocast::set_autocast_enabled(at::kCPU, false);
    EXPECT_EQ(under_autocast, LinearKernel::kAten);
  }
}

TEST(LinearKernel, TheEnvironmentChoosesOrIsRefusedByName) {
  EXPECT_EQ(parse_cpu_linear_preference(nullptr), LinearKernel::kOneDnn);
  EXPECT_EQ(parse_cpu_linear_preference(""), LinearKernel::kOneDnn);
  EXPECT_EQ(parse_cpu_linear_preference("onednn"), LinearKernel::kOneDnn);
  EXPECT_EQ(parse_cpu_linear_preference("aten"), LinearKernel::kAten);
  try {
    parse_cpu_linear_preference("mkl");
    FAIL() << "'mkl' was accepted";
  } catch (const ArgumentError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("environment variable CTRAINER_CPU_LINEAR='mkl'"), std::string::npos)
        << message;
    EXPECT_NE(message.find("'onednn'"), std::string::npos) << message;
    EXPECT_NE(message.find("'aten'"), std::string::npos) << message;
  }
}

/// The weight layouts a model passes to linear(): the [out, in] parameter, Conv1D's [in, out]
/// parameter transposed, and views into wider tensors (rows or, transposed, columns further
/// apart than the weight's sizes) that oneDNN would run on its reference kernel.
enum class WeightLayout { kContiguous, kTransposed, kRowsOfWiderTensor, kTransposedColumnsOfWider };

struct WeightCase {
  at::Tensor parameter;  ///< the leaf whose gradient is checked
  at::Tensor weight;     ///< the [96, 256] view of it that linear() gets
};

WeightCase weight_case(WeightLayout layout, bool fp64 = false, const at::Tensor& from = {}) {
  const auto make = [&](std::vector<int64_t> sizes) {
    at::Tensor t = from.defined() ? from.detach().clone() : torch::randn(sizes);
    return (fp64 ? t.to(at::kDouble) : t).requires_grad_();
  };
  switch (layout) {
    case WeightLayout::kContiguous: {
      const at::Tensor p = make({96, 256});
      return {p, p};
    }
    case WeightLayout::kTransposed: {  // Conv1D's case: stored [in, out], passed transposed
      const at::Tensor p = make({256, 96});
      return {p, p.t()};
    }
    case WeightLayout::kRowsOfWiderTensor: {  // rows 300 apart
      const at::Tensor p = make({96, 300});
      return {p, p.narrow(1, 0, 256)};
    }
    case WeightLayout::kTransposedColumnsOfWider: {  // transposed, columns 130 apart
      const at::Tensor p = make({256, 130});
      return {p, p.narrow(1, 0, 96).t()};
    }
  }
  return {};
}

TEST(LinearKernel, ValuesAndGradientsMatchAnFp64Reference) {
  if (!onednn_available()) GTEST_SKIP() << "this libtorch has no oneDNN";
  torch::manual_seed(0);
  for (const WeightLayout layout :
       {WeightLayout::kContiguous, WeightLayout::kTransposed, WeightLayout::kRowsOfWiderTensor,
        WeightLayout::kTransposedColumnsOfWider}) {
    SCOPED_TRACE(static_cast<int>(layout));
    const at::Tensor x = torch::randn({3, 37, 256}).requires_grad_();
    const WeightCase w = weight_case(layout);
    ASSERT_EQ(w.weight.sizes(), (std::vector<int64_t>{96, 256}));
    const at::Tensor b = torch::randn({96}).requires_grad_();
    const at::Tensor y = ctrainer::linear(x, w.weight, b);
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{3, 37, 96}));
    const at::Tensor upstream = torch::randn({3, 37, 96});
    (y * upstream).sum().backward();

    const at::Tensor x64 = x.detach().to(at::kDouble).requires_grad_();
    const WeightCase w64 = weight_case(layout, /*fp64=*/true, w.parameter);
    const at::Tensor b64 = b.detach().to(at::kDouble).requires_grad_();
    const at::Tensor y64 = at::linear(x64, w64.weight, b64);
    (y64 * upstream.to(at::kDouble)).sum().backward();

    EXPECT_LT(relative_error(y, y64), 1e-6);
    EXPECT_LT(relative_error(x.grad(), x64.grad()), 1e-6);
    EXPECT_LT(relative_error(w.parameter.grad(), w64.parameter.grad()), 1e-6);
    EXPECT_LT(relative_error(b.grad(), b64.grad()), 1e-6);
    EXPECT_EQ(w.parameter.grad().sizes(), w.parameter.sizes());
  }
}

TEST(LinearKernel, WeightsThatOneDnnWouldRunOnItsReferenceKernelAreCopiedFirst) {
  // Timing is the benchmarks' business; which layouts are copied is this test's.
  EXPECT_FALSE(onednn_linear_copies_weight(weight_case(WeightLayout::kContiguous).weight));
  EXPECT_FALSE(onednn_linear_copies_weight(weight_case(WeightLayout::kTransposed).weight));
  EXPECT_TRUE(onednn_linear_copies_weight(weight_case(WeightLayout::kRowsOfWiderTensor).weight));
  EXPECT_TRUE(
      onednn_linear_copies_weight(weight_case(WeightLayout::kTransposedColumnsOfWider).weight));
  // One row of a wider tensor is dense whatever its row stride; one column of it is not.
  EXPECT_FALSE(onednn_linear_copies_weight(torch::randn({2, 300}).narrow(0, 0, 1)));
  EXPECT_TRUE(onednn_linear_copies_weight(torch::randn({96, 300}).narrow(1, 0, 1)));
}

TEST(LinearKernel, TheWeightGradientLeavesInTheWeightsLayout) {
  // A gradient in another layout than its parameter costs a transposing copy in AccumulateGrad,
  // and a tied weight's two gradients (LM head and embedding) add up slowly when their layouts
  // differ. Both of the backward's forms (dW = dyᵀ x, and (xᵀ dy)ᵀ for many rows and more
  // outputs than inputs) must hand dW over with the strides of the weight it came in as.
  if (!onednn_available()) GTEST_SKIP() << "this libtorch has no oneDNN";
  torch::manual_seed(2);
  for (const bool more_outputs : {false, true})
    for (const bool transposed : {false, true}) {
      SCOPED_TRACE(std::to_string(more_outputs) + std::to_string(transposed));
      const int64_t out = more_outputs ? 192 : 64, in = more_outputs ? 64 : 192;
      const at::Tensor stored =
          (transposed ? torch::randn({in, out}) : torch::randn({out, in})).requires_grad_();
      const at::Tensor weight = transposed ? stored.t() : stored;
      const at::Tensor x = torch::randn({300, in});
      const at::Tensor upstream = torch::randn({300, out});
      const at::Tensor grad =
          torch::autograd::grad({(ctrainer::linear(x, weight) * upstream).sum()}, {weight})[0];
      EXPECT_EQ(grad.strides(), weight.strides());
      EXPECT_LT(relative_error(grad, upstream.t().to(at::kDouble).mm(x.to(at::kDouble))), 1e-6);
    }
}

// The operators `run` calls on this thread, by name (RecordFunction takes plain function
// pointers, hence the static list).
template <class Run>
std::vector<std::string> operators_called(Run run) {
  static std::vector<std::string> names;
  names.clear();
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback([](const at::RecordFunction& fn)
                                     -> std::unique_ptr<at::ObserverContext> {
        names.emplace_back(fn.name());
        return nullptr;
      }).needsInputs(false));
  run();
  at::removeCallback(handle);
  return names;
}

bool called(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(LinearKernel, ALargeContiguousWeightsGradientComesFromBlasInItsLayout) {
  // A tied LM head's embedding (vocabulary × hidden, contiguous): oneDNN's product would come out
  // transposed and be copied; at::mm writes dW = dyᵀ x in the weight's layout.
  if (!onednn_available()) GTEST_SKIP() << "this libtorch has no oneDNN";
  torch::manual_seed(4);
  const int64_t in = 512;
  const at::Tensor x = torch::randn({256, in});
  for (const int64_t out : {kBlasWeightGradientMinElements / in + 8,     // BLAS
                            kBlasWeightGradientMinElements / in - 1}) {  // oneDNN
    SCOPED_TRACE(out);
    const bool blas = out * in >= kBlasWeightGradientMinElements;
    const at::Tensor weight = torch::randn({out, in}).requires_grad_();
    const at::Tensor upstream = torch::randn({256, out});
    at::Tensor grad;
    const std::vector<std::string> names = operators_called([&] {
      grad = torch::autograd::grad({(ctrainer::linear(x, weight) * upstream).sum()}, {weight})[0];
    });
    EXPECT_EQ(called(names, "aten::mm"), blas);
    // oneDNN's form is copied into the weight's layout; BLAS's needs no copy.
    EXPECT_EQ(called(names, "aten::clone"), !blas);
    EXPECT_TRUE(grad.is_contiguous());
    EXPECT_LT(relative_error(grad, upstream.t().to(at::kDouble).mm(x.to(at::kDouble))), 1e-6);
  }
}

TEST(LinearKernel, NoBiasAndNoGraphGiveTheGraphsValues) {
  if (!onednn_available()) GTEST_SKIP() << "this libtorch has no oneDNN";
  torch::manual_seed(1);
  const at::Tensor x = torch::randn({5, 64});
  const at::Tensor w = torch::randn({32, 64}).requires_grad_();
  const at::Tensor with_graph = ctrainer::linear(x, w);
  EXPECT_TRUE(with_graph.requires_grad());
  at::Tensor without_graph;
  {
    torch::InferenceMode inference;
    without_graph = ctrainer::linear(x, w);
  }
  EXPECT_FALSE(without_graph.requires_grad());
  EXPECT_TRUE(torch::equal(with_graph.detach(), without_graph));
  EXPECT_LT(relative_error(with_graph.detach(),
                           at::linear(x.to(at::kDouble), w.detach().to(at::kDouble))),
            1e-6);
}

// The layers that carry almost all of a model's products call ctrainer::linear: their output is
// its output bit for bit, and (on oneDNN) not at::linear's, whose additions run in another order.
TEST(LinearKernel, AdaptableLinearAndConv1DGoThroughIt) {
  if (!onednn_available()) GTEST_SKIP() << "this libtorch has no oneDNN";
  torch::manual_seed(2);
  const at::Tensor x = torch::randn({64, 512});
  AdaptableLinear linear(torch::nn::LinearOptions(512, 384));
  const at::Tensor from_layer = linear->forward(x);
  EXPECT_TRUE(torch::equal(from_layer, ctrainer::linear(x, linear->weight, linear->bias)));
  EXPECT_FALSE(torch::equal(from_layer, at::linear(x, linear->weight, linear->bias)));

  Conv1D conv(384, 512);
  const at::Tensor from_conv = conv->forward(x);
  EXPECT_TRUE(torch::equal(from_conv, ctrainer::linear(x, conv->weight.t(), conv->bias)));
  EXPECT_FALSE(torch::equal(from_conv, at::addmm(conv->bias, x, conv->weight)));
}

}  // namespace linear_kernel_test
}  // namespace ctrainer
