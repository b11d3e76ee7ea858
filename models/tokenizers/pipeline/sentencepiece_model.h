#pragma once
/// \file SentencePieceModel: what a SentencePiece `.model` file (tokenizer.model, spiece.model)
/// holds that a tokenizer needs: its pieces with scores and types, the trainer's model type,
/// byte_fallback and special ids, and the normalizer's options and precompiled character map.
/// The file is a serialized sentencepiece.ModelProto (protobuf); read here field by field, as
/// transformers' converters read it through the protobuf package.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ctrainer::tokenizers {

struct SentencePieceModel {
  /// sentencepiece.ModelProto.SentencePiece.Type
  enum class PieceType {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6
  };
  /// sentencepiece.TrainerSpec.ModelType
  enum class ModelType { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };

  struct Piece {
    std::string piece;
    float score = 0;
    PieceType type = PieceType::kNormal;
  };
  std::vector<Piece> pieces;

  // trainer_spec, with the proto's defaults for absent fields.
  ModelType model_type = ModelType::kUnigram;
  bool byte_fallback = false;
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
  std::string unk_piece = "<unk>", bos_piece = "<s>", eos_piece = "</s>", pad_piece = "<pad>";

  // normalizer_spec
  std::string normalizer_name;
  std::string precompiled_charsmap;  ///< bytes; empty when the model has none (identity)
  bool add_dummy_prefix = true, remove_extra_whitespaces = true, escape_whitespaces = true;

  /// Parses a serialized ModelProto; throws ArgumentError naming `source` and what is wrong.
  static SentencePieceModel parse(std::string_view bytes, const std::string& source);
  /// Reads and parses `path`.
  static SentencePieceModel from_file(const std::filesystem::path& path);
};

}  // namespace ctrainer::tokenizers
