// ctrainer-run-elastic: ctrainer-run's elastic agent (--rdzv-backend c10d), a program of its own
// because it links libtorch_cpu for c10d's TCPStore, which the static launcher does without.
// ctrainer-run execs it with its own command line; it can also be started directly.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher/elastic/elastic_agent.h>
#include <ctrainer/distributed/launcher/launch_options.h>

int main(int argc, char** argv) {
  try {
    const auto parsed = ctrainer::launcher::parse_launch_command_line(
        std::vector<std::string>(argv + 1, argv + argc), ctrainer::launcher::launcher_environment);
    if (!parsed.options) {
      std::fputs(parsed.help.c_str(), stdout);
      return 0;
    }
    if (!parsed.options->elastic())
      throw ctrainer::ArgumentError(
          "ctrainer-run-elastic runs --rdzv-backend c10d jobs; start ctrainer-run instead");
    return ctrainer::launcher::run_elastic_agent(*parsed.options);
  } catch (const ctrainer::ArgumentError& error) {
    std::fprintf(stderr, "ctrainer-run: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ctrainer-run: %s\n", error.what());
    return 1;
  }
}
