#pragma once
/// \file Reporting a worker's fatal error to torchrun. torchrun names a file per worker in
/// TORCHELASTIC_ERROR_FILE; when a failed worker wrote it, torchrun's failure summary shows that
/// message as the root cause instead of "To enable traceback see: ...".
#include <string>

namespace ctrainer {

/// Writes `message` to the file named by TORCHELASTIC_ERROR_FILE, in the JSON layout that
/// torch.distributed.elastic's `@record` writes (`{"message": {"message": ..., "extraInfo":
/// {"py_callstack": ..., "timestamp": ...}}}`). Does nothing when the variable is unset or
/// empty (ctrainer-run, SLURM, a plain run). Never throws: failing to write it only loses the
/// summary line, the message has been printed to stderr anyway.
void record_error_for_launcher(const std::string& message);

}  // namespace ctrainer
