#include <ctrainer/distributed/cuda_support.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {
namespace fs = std::filesystem;

struct LoadState {
  const CudaSupportApi* api = nullptr;
  std::string status = "not loaded";
  std::optional<std::string> setting_error;  // reported by select_device, not at load time
  std::optional<std::string> warning;        // a driver is installed but loading failed
};

LoadState& load_state() {
  static LoadState state;
  return state;
}

#ifdef CTRAINER_WITH_CUDA

std::vector<fs::path> module_candidates() {
  std::vector<fs::path> candidates;
  std::error_code error;
  const fs::path program = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    candidates.push_back(program.parent_path() / kCudaSupportModuleName);
    candidates.push_back(program.parent_path() / ".." / CTRAINER_INSTALL_LIBDIR /
                         kCudaSupportModuleName);
  }
  candidates.emplace_back(CTRAINER_CUDA_MODULE_INSTALL_PATH);
  candidates.emplace_back(CTRAINER_CUDA_MODULE_BUILD_PATH);
  return candidates;
}

/// dlopen()s the first module candidate that exists; on failure returns nullptr and says why.
const CudaSupportApi* open_module(std::string& status) {
  std::string looked_in;
  for (const fs::path& candidate : module_candidates()) {
    std::error_code error;
    if (!fs::exists(candidate, error)) {
      looked_in += (looked_in.empty() ? "" : ", ") + candidate.string();
      continue;
    }
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      status = "failed to load " + candidate.string() + ": " + ::dlerror();
      return nullptr;
    }
    using Entry = const CudaSupportApi* (*)();
    const auto entry = reinterpret_cast<Entry>(::dlsym(handle, "ctrainer_cuda_support_api"));
    const CudaSupportApi* api = entry ? entry() : nullptr;
    if (api == nullptr || api->api_version != kCudaSupportApiVersion) {
      status = candidate.string() + " is not this ctrainer build's CUDA module (rebuild it)";
      return nullptr;
    }
    status = "loaded from " + candidate.string();
    return api;
  }
  status = std::string("failed: ") + kCudaSupportModuleName + " was not found (looked in " +
           looked_in + "); reinstall ctrainer or set CTRAINER_CUDA=off";
  return nullptr;
}

bool nvidia_driver_installed() {
  // The driver's user-space library; libtorch_cuda would dlopen the same one.
  return ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr;
}

void load_at_startup() {
  LoadState& state = load_state();
  const char* raw = std::getenv("CTRAINER_CUDA");
  const std::string setting = raw != nullptr && *raw != '\0' ? raw : "auto";
  if (setting != "auto" && setting != "on" && setting != "off") {
    state.setting_error = "CTRAINER_CUDA=" + setting + " is not auto, on or off; unset it or use " +
                          "one of those (CUDA support was not loaded)";
    state.status = "not loaded: CTRAINER_CUDA=" + setting + " is invalid";
    return;
  }
  if (setting == "off") {
    state.status = "not loaded: CTRAINER_CUDA=off";
    return;
  }
  if (setting == "auto" && !nvidia_driver_installed()) {
    state.status = "not loaded: no NVIDIA driver (libcuda.so.1) on this machine";
    return;
  }
  state.api = open_module(state.status);
  if (state.api != nullptr) return;
  if (setting == "on")
    state.setting_error = "CTRAINER_CUDA=on, but CUDA support: " + state.status;
  else
    state.warning = "an NVIDIA driver is installed, but CUDA support: " + state.status +
                    "; training runs on the CPU";
}

// Runs before main() in every program that links this file (see cuda_support.h for why then).
[[maybe_unused]] const bool kLoadedAtStartup = (load_at_startup(), true);

#else

[[maybe_unused]] const bool kLoadedAtStartup =
    (load_state().status = "not loaded: this build has no CUDA code paths (CTRAINER_WITH_CUDA off)",
     true);

#endif

}  // namespace

const CudaSupportApi* cuda_support() {
  return load_state().api;
}

const std::string& cuda_support_status() {
  return load_state().status;
}

std::optional<std::string> cuda_support_warning() {
  return load_state().warning;
}

void require_valid_cuda_support_setting() {
  if (load_state().setting_error) throw ArgumentError(*load_state().setting_error);
}

const CudaSupportApi& require_cuda_support(const std::string& what) {
  require_valid_cuda_support_setting();
  if (cuda_support() == nullptr)
    throw ArgumentError(what + " needs CUDA, but CUDA support: " + cuda_support_status() +
                        "; use --ddp_backend gloo / --use_cpu to run on the CPU");
  return *cuda_support();
}

}  // namespace ctrainer

// Referenced by every program linking ctrainer (--undefined, CMakeLists.txt), so that this file,
// and with it the loader above, is part of each program even when nothing else calls into it.
extern "C" void ctrainer_cuda_support_loader() {}
