#pragma once
/// \file ctrainer-bench's commands besides running a scenario: `report` (results/README.md from
/// the JSON results) and `rerun` (a result's recorded command again), and the command line as
/// recorded in every result ("command").
#include <string>
#include <vector>

namespace ctrainer::bench {

/// argv joined with spaces, each argument single-quoted when the shell would split or expand it,
/// so that the recorded command can be pasted into a shell and split_command() reads it back.
std::string join_command(const std::vector<std::string>& argv);

/// The arguments of a command written by join_command() (or by hand): split at unquoted blanks,
/// with '...' and "..." quoting and backslash escapes. Throws std::invalid_argument on an
/// unterminated quote.
std::vector<std::string> split_command(const std::string& command);

/// `ctrainer-bench report [--results DIR]`: rewrites DIR/README.md (default
/// benchmarks/results). `args` excludes "report". Returns the exit status (2: bad usage, 1: an
/// error, printed with what to do).
int report_command(const std::vector<std::string>& args);

/// `ctrainer-bench rerun FILE`: replaces this process with the scenario run recorded in FILE's
/// "command" (this binary, the recorded arguments), with --json pointing at FILE and --plots,
/// if recorded, at FILE's folder, so the result is rewritten in place whatever the current
/// directory. `scenarios` are the names this binary knows. Returns only on failure.
int rerun_command(const std::vector<std::string>& args, const std::vector<std::string>& scenarios,
                  const std::string& argv0);

}  // namespace ctrainer::bench
