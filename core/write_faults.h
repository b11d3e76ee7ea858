#pragma once
/// \file Fault injection at every file write of a checkpoint, for the tests that prove a failing
/// disk or a kill during a save never costs the previous checkpoint. write_json_file and
/// save_safetensors call write_fault() before writing `path`; a fault set here (in-process) or
/// in the environment (for a whole program) then makes that write fail as the disk would, or
/// kills the process there.
///
/// CTRAINER_TEST_WRITE_FAULT="<file name>[@<checkpoint step>]:<ENOSPC|EIO|SIGKILL>": the first
/// write of a file of that name (inside the temporary folder of checkpoint <step>, when given)
/// fails with that error, or the process kills itself with SIGKILL just before writing it.
/// A test hook: never set it in production.
#include <filesystem>
#include <functional>

namespace ctrainer {

/// Returns 0 to let the write of `path` go on, or an errno value the write fails with.
using WriteFaultHook = std::function<int(const std::filesystem::path& path)>;

/// Installs an in-process hook (tests); an empty one removes it.
void set_write_fault_hook(WriteFaultHook hook);

/// 0, or the errno the write of `path` must fail with (the hook's, else the environment's).
/// Kills the process for a SIGKILL fault. Throws ArgumentError for a malformed
/// CTRAINER_TEST_WRITE_FAULT.
int write_fault(const std::filesystem::path& path);

}  // namespace ctrainer
