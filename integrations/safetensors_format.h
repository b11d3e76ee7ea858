#pragma once
/// \file Internal to the safetensors reader and writer (integrations/safetensors_*.cpp), not part
/// of the API: the dtype table, the error helpers that name the file, the I/O chunk limit, and
/// header validation, which both reading a file and reading only its header use.
#include <ATen/ATen.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <ctrainer/integrations/safetensors.h>

namespace ctrainer::safetensors_detail {

// The format stores little-endian bytes and tensors are written and read as raw memory.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O copies tensor memory as-is and needs a little-endian host");

struct DtypeInfo {
  const char* name;
  at::ScalarType type;
  std::size_t size;
};

// In the order of the reference implementation's Dtype enum (increasing alignment). Writing in
// reverse order of this table reproduces its data layout: largest elements first.
// In the order of the reference writer's dtype enum: it lays tensors out by decreasing rank
// (checked against safetensors 0.8's Python package in the golden test).
inline constexpr DtypeInfo kDtypes[] = {
    {"BOOL", at::kBool, 1},
    {"U8", at::kByte, 1},
    {"I8", at::kChar, 1},
    {"F8_E5M2", at::kFloat8_e5m2, 1},
    {"F8_E4M3", at::kFloat8_e4m3fn, 1},
    {"F8_E4M3FNUZ", at::kFloat8_e4m3fnuz, 1},
    {"F8_E5M2FNUZ", at::kFloat8_e5m2fnuz, 1},
    {"I16", at::kShort, 2},
    {"U16", at::kUInt16, 2},
    {"F16", at::kHalf, 2},
    {"BF16", at::kBFloat16, 2},
    {"I32", at::kInt, 4},
    {"U32", at::kUInt32, 4},
    {"F32", at::kFloat, 4},
    {"C64", at::kComplexFloat, 8},
    {"F64", at::kDouble, 8},
    {"I64", at::kLong, 8},
    {"U64", at::kUInt64, 8},
};
inline constexpr const char* kSupportedList =
    "F64, F32, F16, BF16, C64, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2, "
    "F8_E4M3FNUZ, F8_E5M2FNUZ";

// A single read()/write() transfers at most ~2 GiB on Linux; stay well below.
inline constexpr std::size_t kMaxIoChunk = std::size_t{1} << 30;

const DtypeInfo* find_dtype(std::string_view name);
const DtypeInfo* find_dtype(at::ScalarType type);

[[noreturn]] void fail(const std::string& source, const std::string& what);
/// fail() with strerror(errno) appended to `action`.
[[noreturn]] void fail_errno(const std::string& source, const std::string& action);

// A name from the file, quoted and cut short: hostile headers may hold megabyte-long keys.
std::string shown(std::string_view name);

[[noreturn]] void fail_tensor(const std::string& source, std::string_view name,
                              const std::string& what);

// Validates the JSON header of a file whose data section holds `data_len` bytes.
SafetensorsHeader parse_header(std::string_view text, std::uint64_t data_len,
                               const std::string& source);

}  // namespace ctrainer::safetensors_detail
