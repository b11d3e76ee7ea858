// A worker for the ctrainer-run tests that builds the Gloo process group from the launch
// environment, checks all-reduce, broadcast, all-gather (of equal and of per-rank shapes), the
// store-based string gather and barrier against closed-form results, and tears the group down. Exit
// code 0 when every check passed, 1 on a wrong result, 3 on an error (the message goes to stderr).
//   --timeout S   rendezvous and collective timeout in seconds (default 30)
#include <cstdio>
#include <cstdlib>
#include <string>

#include <ctrainer/distributed/process_group.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/distributed/tensor_gather.h>

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  double timeout_s = 30;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--timeout") timeout_s = std::stod(argv[++i]);
  try {
    const auto info = ctrainer::ProcessInfo::from_environment();
    ctrainer::ProcessGroupOptions options;
    options.backend = ctrainer::resolve_backend(std::nullopt, c10::Device(c10::kCPU));
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    ctrainer::ProcessGroup group(info, options);
    const double r = static_cast<double>(info.rank);
    const double w = static_cast<double>(info.world_size);

    at::Tensor sum = at::tensor({r + 1, 10 * (r + 1)}, at::kDouble);
    group.all_reduce(sum);
    const double expected = w * (w + 1) / 2;  // 1 + 2 + ... + W
    // The last rank broadcasts its own rank.
    at::Tensor value = at::full({3}, info.rank == info.world_size - 1 ? r : -1.0, at::kDouble);
    group.broadcast(value, info.world_size - 1);
    // Rank k contributes a [k + 1, k + 2] block filled with k, so every shape differs.
    const auto rank_block = [](int64_t k) {
      return at::full({k + 1, k + 2}, static_cast<float>(k), at::kFloat);
    };
    const std::vector<at::Tensor> blocks =
        ctrainer::all_gather_variable(group, rank_block(info.rank));
    const std::vector<at::Tensor> ranks = group.all_gather(at::full({2}, r, at::kLong));
    const std::vector<std::string> names =
        group.all_gather_strings("rank" + std::to_string(info.rank));
    group.barrier();
    group.shutdown();

    bool gathered = static_cast<int64_t>(blocks.size()) == info.world_size &&
                    static_cast<int64_t>(ranks.size()) == info.world_size &&
                    static_cast<int64_t>(names.size()) == info.world_size;
    for (int64_t k = 0; gathered && k < info.world_size; ++k)
      gathered = at::equal(blocks[static_cast<size_t>(k)], rank_block(k)) &&
                 ranks[static_cast<size_t>(k)].eq(k).all().item<bool>() &&
                 names[static_cast<size_t>(k)] == "rank" + std::to_string(k);
    std::printf("rank %lld: all-gather %s\n", static_cast<long long>(info.rank),
                gathered ? "OK" : "WRONG");
    const bool ok = sum[0].item<double>() == expected && sum[1].item<double>() == 10 * expected &&
                    value.eq(w - 1).all().item<bool>() && gathered;
    std::printf("rank %lld of %lld (%s): all-reduce %g %g, broadcast %g: %s\n",
                static_cast<long long>(info.rank), static_cast<long long>(info.world_size),
                group.backend().c_str(), sum[0].item<double>(), sum[1].item<double>(),
                value[0].item<double>(), ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "launcher_gloo_worker: %s\n", error.what());
    return 3;
  }
}
