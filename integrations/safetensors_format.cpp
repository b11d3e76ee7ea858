// The safetensors dtype table lookups and the error helpers shared by the reader and the writer.
#include <ctrainer/integrations/safetensors_format.h>

#include <cerrno>
#include <cstring>

namespace ctrainer {
namespace safetensors_detail {

const DtypeInfo* find_dtype(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const DtypeInfo* find_dtype(at::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (type == d.type) return &d;
  }
  return nullptr;
}

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw SafetensorsError("safetensors file '" + source + "': " + what);
}

[[noreturn]] void fail_errno(const std::string& source, const std::string& action) {
  const int err = errno;
  fail(source, action + ": " + std::strerror(err));
}

// A name from the file, quoted and cut short: hostile headers may hold megabyte-long keys.
std::string shown(std::string_view name) {
  constexpr std::size_t kMax = 200;
  // Appends rather than operator+ on temporaries: GCC 12 warns (-Wstringop-overflow) on those.
  std::string s(1, '\'');
  s.append(name.substr(0, kMax));
  if (name.size() <= kMax) {
    s += '\'';
  } else {
    s += "...' (";
    s += std::to_string(name.size());
    s += " bytes)";
  }
  return s;
}

[[noreturn]] void fail_tensor(const std::string& source, std::string_view name,
                              const std::string& what) {
  fail(source, "tensor " + shown(name) + ": " + what);
}

}  // namespace safetensors_detail

using namespace safetensors_detail;

std::string safetensors_dtype_name(at::ScalarType dtype) {
  const DtypeInfo* d = find_dtype(dtype);
  if (d == nullptr) {
    throw SafetensorsError(std::string("dtype ") + c10::toString(dtype) +
                           " cannot be stored in safetensors (supported: " + kSupportedList + ")");
  }
  return d->name;
}

}  // namespace ctrainer
