#pragma once
/// \file The safetensors tensor file format (https://github.com/huggingface/safetensors), read and
/// written without the upstream library so checkpoints are portable across libtorch versions and
/// loadable by Python's `safetensors.torch.load_file`.
///
/// Layout: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON
///   {"__metadata__": {"format": "pt", ...},
///    "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
/// padded with spaces so that N is a multiple of 8, then the raw little-endian tensor bytes.
/// Offsets are relative to the first byte after the header; the tensors cover the data section
/// exactly, with no holes, no overlaps and no trailing bytes.
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ctrainer {

/// A safetensors file is malformed, a tensor cannot be stored in the format, or reading or writing
/// the file failed. `what()` names the file (or the in-memory source) and the problem.
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Largest JSON header accepted when reading (the limit of the reference implementation); it
/// bounds the memory a hostile file can make the reader allocate before any validation.
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

/// Tensors by name plus the string metadata of the `__metadata__` entry.
struct SafetensorsFile {
  std::map<std::string, at::Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// One header entry: where a tensor's bytes lie, without the bytes.
struct SafetensorsTensorInfo {
  std::string name;
  at::ScalarType dtype = at::kFloat;
  std::vector<std::int64_t> shape;
  /// Byte range [data_begin, data_end) relative to the start of the data section.
  std::uint64_t data_begin = 0;
  std::uint64_t data_end = 0;
};

/// The validated header of a safetensors file.
struct SafetensorsHeader {
  /// Entries ordered by their position in the data section.
  std::vector<SafetensorsTensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  /// N, the JSON header length including its padding; the data section starts at byte 8 + N.
  std::uint64_t header_bytes = 0;
};

/// The safetensors name of a dtype ("F32", "BF16", "BOOL", ...). Supported: F64, F32, F16, BF16,
/// I64, I32, I16, I8, U8, BOOL. Throws SafetensorsError for any other dtype.
std::string safetensors_dtype_name(at::ScalarType dtype);

/// Writes `tensors` to `path` (created or truncated). Tensors may live on any device and have any
/// strides: each is copied to contiguous CPU memory, one at a time, while writing. `metadata` is
/// stored as `__metadata__` and gets "format": "pt" unless it has a "format" key. Data is laid out
/// by decreasing element size, then by name, so every tensor is aligned to its element size (the
/// header is padded with spaces to a multiple of 8). The file is fsync'ed before returning, so a
/// caller may rename it into place. Every tensor is checked before the file is opened (defined,
/// strided, supported dtype, name not "__metadata__", names valid UTF-8), so bad input leaves an
/// existing file untouched. Throws SafetensorsError naming the path on bad input and on any I/O
/// error (disk full included); a partially written regular file is removed.
void save_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// The exact bytes save_safetensors() writes, in memory.
std::string serialize_safetensors(const std::map<std::string, at::Tensor>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});

/// Reads and validates a whole file into CPU tensors. Any malformation throws SafetensorsError
/// naming the file and the problem: file shorter than 8 bytes; header length over
/// kSafetensorsMaxHeaderBytes or past the end of the file; header not starting with '{', not valid
/// UTF-8 JSON or with a duplicate key at any level; an entry that is not an object, lacks dtype,
/// shape or data_offsets or has them with the wrong type; an unknown or unsupported dtype; a
/// shape that is not an array of non-negative integers or whose element count overflows; data
/// offsets that are not two non-negative integers, end before begin, lie past the data section or
/// do not span numel * element size bytes; tensors that overlap, leave a hole, or leave trailing
/// bytes after the last one; `__metadata__` that is not an object of strings; BOOL bytes other
/// than 0 and 1. Unknown extra fields in an entry are ignored, as the reference reader does.
SafetensorsFile load_safetensors(const std::string& path);

/// load_safetensors() over bytes in memory; `source_name` stands for the file name in errors.
SafetensorsFile deserialize_safetensors(std::string_view bytes,
                                        const std::string& source_name = "<memory>");

/// Reads and validates only the header of a file (names, dtypes, shapes, offsets, metadata),
/// without reading the tensor data. Applies every check of load_safetensors() except the BOOL
/// byte check, which needs the data.
SafetensorsHeader read_safetensors_header(const std::string& path);

}  // namespace ctrainer
