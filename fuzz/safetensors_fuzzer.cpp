// The safetensors reader on arbitrary bytes: deserialize_safetensors (memory), and
// read_safetensors_header + load_safetensors (the file readers every checkpoint and model load
// uses). Bad input must throw SafetensorsError (integrations/safetensors.h).
// Differential checks: the file readers agree with the memory reader, and what was read writes
// back (serialize_safetensors) and reads again to the same names, dtypes, shapes, bytes and
// metadata.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <ctrainer/integrations/safetensors.h>

#include "fuzz_support.h"

namespace {

using ctrainer::SafetensorsError;
using ctrainer::SafetensorsFile;

[[noreturn]] void mismatch(const char* what) {
  std::fprintf(stderr, "safetensors_fuzzer: %s\n", what);
  std::abort();
}

bool same_tensor(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || !a.sizes().equals(b.sizes())) return false;
  const at::Tensor ca = a.contiguous(), cb = b.contiguous();
  const size_t bytes = static_cast<size_t>(ca.numel()) * ca.element_size();
  return bytes == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), bytes) == 0;
}

void check_same(const SafetensorsFile& a, const SafetensorsFile& b, const char* what) {
  if (a.tensors.size() != b.tensors.size()) mismatch(what);
  for (const auto& [name, tensor] : a.tensors) {
    const auto it = b.tensors.find(name);
    if (it == b.tensors.end() || !same_tensor(tensor, it->second)) mismatch(what);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const std::string_view bytes = ctrainer::fuzz::bytes_of(data, size);

  std::optional<SafetensorsFile> in_memory;
  try {
    in_memory = ctrainer::deserialize_safetensors(bytes, "fuzz.safetensors");
  } catch (const SafetensorsError&) {
  }

  const std::string path = ctrainer::fuzz::scratch_file("input.safetensors", bytes).string();
  std::optional<ctrainer::SafetensorsHeader> header;
  try {
    header = ctrainer::read_safetensors_header(path);
  } catch (const SafetensorsError&) {
  }
  // The header reader applies every check but the BOOL bytes one.
  if (in_memory && !header) mismatch("the memory reader accepted what the header reader refused");
  if (header && in_memory) {
    if (header->tensors.size() != in_memory->tensors.size() ||
        header->metadata != in_memory->metadata)
      mismatch("the header reader and the memory reader disagree");
    for (const auto& info : header->tensors) {
      const auto it = in_memory->tensors.find(info.name);
      if (it == in_memory->tensors.end() || it->second.scalar_type() != info.dtype ||
          it->second.sizes().vec() != info.shape)
        mismatch("the header reader and the memory reader disagree on a tensor");
    }
  }

  std::optional<SafetensorsFile> from_file;
  try {
    from_file = ctrainer::load_safetensors(path);
  } catch (const SafetensorsError&) {
  }
  if (in_memory.has_value() != from_file.has_value())
    mismatch("the file reader and the memory reader disagree on validity");
  if (!in_memory) return 0;
  check_same(*in_memory, *from_file, "the file reader and the memory reader read different data");
  if (in_memory->metadata != from_file->metadata) mismatch("metadata differs between the readers");

  // What was read must write back and read again unchanged (the writer adds "format": "pt" when
  // the metadata has no "format").
  std::string written;
  try {
    written = ctrainer::serialize_safetensors(in_memory->tensors, in_memory->metadata);
  } catch (const SafetensorsError& e) {
    std::fprintf(stderr, "safetensors_fuzzer: a file that reads does not write back: %s\n",
                 e.what());
    std::abort();
  }
  const SafetensorsFile again = ctrainer::deserialize_safetensors(written, "round trip");
  check_same(*in_memory, again, "the round trip changed the tensors");
  auto metadata = in_memory->metadata;
  metadata.emplace("format", "pt");
  if (again.metadata != metadata) mismatch("the round trip changed the metadata");
  return 0;
}
