#pragma once
// The resident memory of the test process, for tests of what is kept and given back.
#include <unistd.h>

#include <cstdint>
#include <fstream>

namespace ctrainer::testing {

/// Resident memory of this process in bytes (/proc/self/statm's second field, in pages).
inline int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace ctrainer::testing
