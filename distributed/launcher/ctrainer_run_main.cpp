// ctrainer-run: torchrun for C++ programs. Starts and supervises the workers of one node; see
// supervisor.h for the failure and signal rules and README.md ("Multi-process launch").
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher/launch_options.h>
#include <ctrainer/distributed/launcher/supervisor.h>

int main(int argc, char** argv) {
  try {
    const auto parsed = ctrainer::launcher::parse_launch_command_line(
        std::vector<std::string>(argv + 1, argv + argc), ctrainer::launcher::launcher_environment);
    if (!parsed.options) {
      std::fputs(parsed.help.c_str(), stdout);
      return 0;
    }
    if (parsed.options->elastic()) {
      // The c10d rendezvous lives in ctrainer-run-elastic (it links libtorch_cpu for c10d's
      // TCPStore), installed next to this program: it takes over with the same command line.
      const std::filesystem::path elastic =
          std::filesystem::read_symlink("/proc/self/exe").parent_path() / "ctrainer-run-elastic";
      std::vector<char*> arguments(argv, argv + argc);
      const std::string program = elastic.string();
      arguments.front() = const_cast<char*>(program.c_str());
      arguments.push_back(nullptr);
      ::execv(program.c_str(), arguments.data());
      throw std::runtime_error("--rdzv-backend c10d runs " + program + ", which cannot be " +
                               "started (" + std::strerror(errno) +
                               "); it is built and installed with ctrainer-run");
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
