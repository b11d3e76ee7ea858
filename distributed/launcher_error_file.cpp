#include <ctrainer/distributed/launcher_error_file.h>

#include <chrono>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include <ctrainer/core/json_file.h>

namespace ctrainer {

void record_error_for_launcher(const std::string& message) {
  const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (path == nullptr || *path == '\0') return;
  try {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    // torchrun prints py_callstack in its summary (falling back to message); a C++ program has
    // no Python stack, so both carry the message. The timestamp is a string of seconds, as
    // @record writes it (torchrun parses it with int()).
    const nlohmann::json data = {
        {"message",
         {{"message", message},
          {"extraInfo",
           {{"py_callstack", message},
            {"timestamp",
             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count())}}}}}};
    write_json_file(path, data, /*indent=*/-1);
  } catch (...) {
    // Best effort by design (see the header): the caller is already reporting an error.
  }
}

}  // namespace ctrainer
