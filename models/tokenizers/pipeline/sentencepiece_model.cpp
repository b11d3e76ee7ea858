#include <ctrainer/models/tokenizers/pipeline/sentencepiece_model.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include <ctrainer/core/errors.h>

namespace ctrainer::tokenizers {

namespace {

/// The protobuf wire format (varints, 32/64-bit and length-delimited fields): enough to walk a
/// ModelProto and skip what a tokenizer does not use. Debian's libsentencepiece-dev ships no
/// ModelProto header, and its processor API hides the trainer and normalizer specs.
class WireReader {
 public:
  WireReader(std::string_view bytes, const std::string& what) : bytes_(bytes), what_(what) {}
  bool done() const { return at_ >= bytes_.size(); }

  /// The next field's number and wire type.
  std::pair<uint32_t, uint32_t> tag() {
    const uint64_t key = varint();
    const uint64_t field = key >> 3;
    if (field == 0 || field > 536870911) fail("a field number of 0 or beyond protobuf's range");
    return {static_cast<uint32_t>(field), static_cast<uint32_t>(key & 7)};
  }
  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) fail("the data ends inside a number");
      const auto byte = static_cast<uint8_t>(bytes_[at_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    fail("a number longer than 10 bytes");
  }
  std::string_view bytes() {
    const uint64_t size = varint();
    if (size > bytes_.size() - at_) fail("a length beyond the end of the data");
    const std::string_view out = bytes_.substr(at_, size);
    at_ += size;
    return out;
  }
  float fixed32_float() {
    if (bytes_.size() - at_ < 4) fail("the data ends inside a 32-bit field");
    uint32_t raw = 0;
    for (int i = 3; i >= 0; --i) raw = (raw << 8) | static_cast<uint8_t>(bytes_[at_ + i]);
    at_ += 4;
    float value;
    std::memcpy(&value, &raw, sizeof value);
    return value;
  }
  /// Reads a field of `wire_type` that is expected to be a varint; fails otherwise.
  uint64_t expect_varint(uint32_t wire_type, const char* field) {
    if (wire_type != 0) fail(std::string(field) + " is not a number");
    return varint();
  }
  std::string_view expect_bytes(uint32_t wire_type, const char* field) {
    if (wire_type != 2) fail(std::string(field) + " is not a string or message");
    return bytes();
  }
  void skip(uint32_t wire_type) {
    switch (wire_type) {
      case 0:
        varint();
        return;
      case 1:
        advance(8);
        return;
      case 2:
        bytes();
        return;
      case 5:
        advance(4);
        return;
      default:
        fail("a field of wire type " + std::to_string(wire_type) +
             " (protobuf writes types 0, 1, 2 and 5)");
    }
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw ArgumentError(what_ + ": not a SentencePiece model (" + why + " at byte " +
                        std::to_string(at_) +
                        "); expected the tokenizer.model / spiece.model "
                        "file sentencepiece's trainer writes");
  }

 private:
  void advance(size_t n) {
    if (bytes_.size() - at_ < n) fail("the data ends inside a field");
    at_ += n;
  }
  std::string_view bytes_;
  std::string what_;
  size_t at_ = 0;
};

int32_t as_int32(uint64_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(v));
}

SentencePieceModel::Piece read_piece(WireReader& r) {
  SentencePieceModel::Piece p;
  while (!r.done()) {
    const auto [field, wire] = r.tag();
    if (field == 1) {
      p.piece = std::string(r.expect_bytes(wire, "a piece's text"));
    } else if (field == 2) {
      if (wire != 5) r.fail("a piece's score is not a float");
      p.score = r.fixed32_float();
    } else if (field == 3) {
      const uint64_t type = r.expect_varint(wire, "a piece's type");
      if (type < 1 || type > 6) r.fail("piece type " + std::to_string(type) + " (expected 1-6)");
      p.type = static_cast<SentencePieceModel::PieceType>(type);
    } else {
      r.skip(wire);
    }
  }
  return p;
}

void read_trainer_spec(WireReader& r, SentencePieceModel& m) {
  while (!r.done()) {
    const auto [field, wire] = r.tag();
    switch (field) {
      case 3: {
        const uint64_t type = r.expect_varint(wire, "model_type");
        if (type < 1 || type > 4) r.fail("model_type " + std::to_string(type) + " (expected 1-4)");
        m.model_type = static_cast<SentencePieceModel::ModelType>(type);
        break;
      }
      case 35:
        m.byte_fallback = r.expect_varint(wire, "byte_fallback") != 0;
        break;
      case 40:
        m.unk_id = as_int32(r.expect_varint(wire, "unk_id"));
        break;
      case 41:
        m.bos_id = as_int32(r.expect_varint(wire, "bos_id"));
        break;
      case 42:
        m.eos_id = as_int32(r.expect_varint(wire, "eos_id"));
        break;
      case 43:
        m.pad_id = as_int32(r.expect_varint(wire, "pad_id"));
        break;
      case 45:
        m.unk_piece = std::string(r.expect_bytes(wire, "unk_piece"));
        break;
      case 46:
        m.bos_piece = std::string(r.expect_bytes(wire, "bos_piece"));
        break;
      case 47:
        m.eos_piece = std::string(r.expect_bytes(wire, "eos_piece"));
        break;
      case 48:
        m.pad_piece = std::string(r.expect_bytes(wire, "pad_piece"));
        break;
      default:
        r.skip(wire);
    }
  }
}

void read_normalizer_spec(WireReader& r, SentencePieceModel& m) {
  while (!r.done()) {
    const auto [field, wire] = r.tag();
    switch (field) {
      case 1:
        m.normalizer_name = std::string(r.expect_bytes(wire, "normalizer name"));
        break;
      case 2:
        m.precompiled_charsmap = std::string(r.expect_bytes(wire, "precompiled_charsmap"));
        break;
      case 3:
        m.add_dummy_prefix = r.expect_varint(wire, "add_dummy_prefix") != 0;
        break;
      case 4:
        m.remove_extra_whitespaces = r.expect_varint(wire, "remove_extra_whitespaces") != 0;
        break;
      case 5:
        m.escape_whitespaces = r.expect_varint(wire, "escape_whitespaces") != 0;
        break;
      default:
        r.skip(wire);
    }
  }
}

}  // namespace

SentencePieceModel SentencePieceModel::parse(std::string_view bytes, const std::string& source) {
  SentencePieceModel m;
  WireReader r(bytes, source);
  while (!r.done()) {
    const auto [field, wire] = r.tag();
    if (field == 1) {
      WireReader piece(r.expect_bytes(wire, "a piece"), source);
      m.pieces.push_back(read_piece(piece));
    } else if (field == 2) {
      WireReader spec(r.expect_bytes(wire, "trainer_spec"), source);
      read_trainer_spec(spec, m);
    } else if (field == 3) {
      WireReader spec(r.expect_bytes(wire, "normalizer_spec"), source);
      read_normalizer_spec(spec, m);
    } else {
      r.skip(wire);
    }
  }
  if (m.pieces.empty()) r.fail("no pieces");
  const auto valid = [&](int32_t id) { return id < static_cast<int64_t>(m.pieces.size()); };
  if (!valid(m.unk_id) || !valid(m.bos_id) || !valid(m.eos_id) || !valid(m.pad_id))
    r.fail("a special id beyond the " + std::to_string(m.pieces.size()) + " pieces");
  if (m.unk_id < 0) r.fail("no unknown piece (unk_id < 0), which sentencepiece requires");
  return m;
}

SentencePieceModel SentencePieceModel::from_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ArgumentError("cannot read the SentencePiece model " + path.string());
  std::stringstream bytes;
  bytes << in.rdbuf();
  return parse(bytes.str(), path.string());
}

}  // namespace ctrainer::tokenizers
