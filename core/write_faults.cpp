#include <ctrainer/core/write_faults.h>

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

struct EnvironmentFault {
  std::string file_name;
  std::optional<std::string> checkpoint_step;
  int error = 0;  // an errno value, or -SIGKILL
  bool used = false;
};

std::mutex& fault_mutex() {
  static std::mutex mutex;
  return mutex;
}

WriteFaultHook& hook() {
  static WriteFaultHook installed;
  return installed;
}

std::optional<EnvironmentFault> parse_environment_fault() {
  const char* text = std::getenv("CTRAINER_TEST_WRITE_FAULT");
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::string spec = text;
  const auto bad = [&] {
    return ArgumentError("CTRAINER_TEST_WRITE_FAULT=" + spec +
                         ": write <file name>[@<checkpoint step>]:<ENOSPC|EIO|SIGKILL>, e.g. "
                         "optimizer.safetensors@4:ENOSPC");
  };
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0) throw bad();
  EnvironmentFault fault;
  const std::string kind = spec.substr(colon + 1);
  if (kind == "ENOSPC")
    fault.error = ENOSPC;
  else if (kind == "EIO")
    fault.error = EIO;
  else if (kind == "SIGKILL")
    fault.error = -SIGKILL;
  else
    throw bad();
  std::string target = spec.substr(0, colon);
  if (const size_t at = target.find('@'); at != std::string::npos) {
    fault.checkpoint_step = target.substr(at + 1);
    target.resize(at);
    if (fault.checkpoint_step->empty() ||
        fault.checkpoint_step->find_first_not_of("0123456789") != std::string::npos)
      throw bad();
  }
  if (target.empty()) throw bad();
  fault.file_name = target;
  return fault;
}

/// Whether `path` is `fault`'s file (inside checkpoint <step>'s temporary folder when given).
bool matches(const EnvironmentFault& fault, const std::filesystem::path& path) {
  if (path.filename() != fault.file_name) return false;
  if (!fault.checkpoint_step) return true;
  const std::string prefix = ".tmp-checkpoint-" + *fault.checkpoint_step + "-";
  for (const auto& part : path.parent_path())
    if (part.string().rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

void set_write_fault_hook(WriteFaultHook new_hook) {
  std::lock_guard<std::mutex> lock(fault_mutex());
  hook() = std::move(new_hook);
}

int write_fault(const std::filesystem::path& path) {
  std::lock_guard<std::mutex> lock(fault_mutex());
  if (hook()) return hook()(path);
  static std::optional<EnvironmentFault> fault = parse_environment_fault();
  if (!fault || fault->used || !matches(*fault, path)) return 0;
  fault->used = true;
  if (fault->error == -SIGKILL) ::raise(SIGKILL);
  return fault->error;
}

}  // namespace ctrainer
