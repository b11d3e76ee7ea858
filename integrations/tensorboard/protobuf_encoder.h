#pragma once
/// \file The protocol-buffer wire format, encode side only, for the few messages ctrainer writes
/// (TensorBoard events): varints, 32/64-bit fixed fields and length-delimited fields
/// (https://protobuf.dev/programming-guides/encoding/). A field appended is a field sent:
/// proto3 defaults are not skipped, which readers accept.
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ctrainer::tensorboard {

class ProtobufEncoder {
 public:
  /// An int64/uint64/enum field (wire type 0).
  void varint(int field, uint64_t value) {
    key(field, 0);
    raw_varint(value);
  }
  /// A double field (wire type 1, little-endian).
  void fixed64_double(int field, double value) {
    key(field, 1);
    append_little_endian(std::bit_cast<uint64_t>(value));
  }
  /// A float field (wire type 5, little-endian).
  void fixed32_float(int field, float value) {
    key(field, 5);
    append_little_endian(std::bit_cast<uint32_t>(value));
  }
  /// A string or bytes field (wire type 2).
  void string(int field, std::string_view value) {
    key(field, 2);
    raw_varint(value.size());
    bytes_.append(value);
  }
  /// An embedded message, given as its encoded bytes (wire type 2).
  void message(int field, std::string_view encoded) { string(field, encoded); }

  const std::string& bytes() const { return bytes_; }

 private:
  void key(int field, int wire_type) {
    raw_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
  }
  void raw_varint(uint64_t value) {
    while (value >= 0x80) {
      bytes_.push_back(static_cast<char>((value & 0x7F) | 0x80));
      value >>= 7;
    }
    bytes_.push_back(static_cast<char>(value));
  }
  template <typename Unsigned>
  void append_little_endian(Unsigned value) {
    for (size_t i = 0; i < sizeof(Unsigned); ++i)
      bytes_.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }
  std::string bytes_;
};

}  // namespace ctrainer::tensorboard
