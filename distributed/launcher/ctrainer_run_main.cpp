// ctrainer-run: torchrun for C++ programs. Starts and supervises the workers of one node; see
// supervisor.h for the failure and signal rules and README.md ("Multi-process launch").
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher/launch_options.h>
#include <ctrainer/distributed/launcher/supervisor.h>

int main(int argc, char** argv) {
  try {
    const auto parsed = ctrainer::launcher::parse_launch_command_line(
        std::vector<std::string>(argv + 1, argv + argc),
        [](const std::string& name) -> std::optional<std::string> {
          const char* value = std::getenv(name.c_str());
          if (value == nullptr || *value == '\0') return std::nullopt;
          return std::string(value);
        });
    if (!parsed.options) {
      std::fputs(parsed.help.c_str(), stdout);
      return 0;
    }
    return ctrainer::launcher::run_workers(*parsed.options);
  } catch (const ctrainer::ArgumentError& error) {
    std::fprintf(stderr, "ctrainer-run: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ctrainer-run: %s\n", error.what());
    return 1;
  }
}
