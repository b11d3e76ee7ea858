// SentencePiece models: the ModelProto reader against hand-encoded protobuf (fields, the
// proto's defaults, negative ids, malformed data refused with the file), and the tokenizer
// transformers builds from a model per class (merge order, T5's sentinels, refused classes).
// Parity with transformers on trained models is tests/parity/tokenizer_spm_parity.py.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/pipeline/sentencepiece_files.h>
#include <ctrainer/models/tokenizers/pipeline/sentencepiece_model.h>
#include <ctrainer/models/tokenizers/tokenizer_registry.h>

namespace sentencepiece_model_test {

namespace fs = std::filesystem;
using ctrainer::tokenizers::SentencePieceModel;
using nlohmann::json;

// Protobuf wire encoding, enough to write a ModelProto by hand.
std::string varint(uint64_t v) {
  std::string out;
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    if (v) byte |= 0x80;
    out += static_cast<char>(byte);
  } while (v);
  return out;
}
std::string number(uint32_t field, int64_t v) {
  return varint(field << 3) + varint(static_cast<uint64_t>(v));
}
std::string bytes(uint32_t field, const std::string& v) {
  return varint((field << 3) | 2) + varint(v.size()) + v;
}
std::string real(uint32_t field, float v) {
  uint32_t raw;
  std::memcpy(&raw, &v, 4);
  std::string out = varint((field << 3) | 5);
  for (int i = 0; i < 4; ++i) out += static_cast<char>((raw >> (8 * i)) & 0xff);
  return out;
}
std::string piece(const std::string& text, float score, int type = 1) {
  return bytes(1, bytes(1, text) + real(2, score) + (type == 1 ? "" : number(3, type)));
}

/// <unk> <s> </s> ▁ a b ▁a ab ▁ab: a BPE model whose scores rank "▁a" + "b" before "a" + "b".
std::string small_bpe_model(bool add_dummy_prefix) {
  std::string m = piece("<unk>", 0, 2) + piece("<s>", 0, 3) + piece("</s>", 0, 3) +
                  piece("\xE2\x96\x81", -1) + piece("a", -2) + piece("b", -3) +
                  piece(
                      "\xE2\x96\x81"
                      "a",
                      -4) +
                  piece("ab", -6) +
                  piece(
                      "\xE2\x96\x81"
                      "ab",
                      -5);
  m += bytes(2, number(3, 2) + number(35, 1) + number(43, -1) + bytes(46, "<s>") + number(99, 7));
  m += bytes(3, bytes(1, "identity") + number(3, add_dummy_prefix ? 1 : 0));
  m += bytes(5, bytes(1, "ignored denormalizer"));
  return m;
}

TEST(SentencePieceModel, ReadsPiecesAndSpecsWithTheProtosDefaults) {
  const SentencePieceModel m = SentencePieceModel::parse(small_bpe_model(false), "spm.model");
  ASSERT_EQ(m.pieces.size(), 9u);
  EXPECT_EQ(m.pieces[0].piece, "<unk>");
  EXPECT_EQ(m.pieces[0].type, SentencePieceModel::PieceType::kUnknown);
  EXPECT_EQ(m.pieces[1].type, SentencePieceModel::PieceType::kControl);
  EXPECT_EQ(m.pieces[4].type, SentencePieceModel::PieceType::kNormal);  // absent: NORMAL
  EXPECT_FLOAT_EQ(m.pieces[5].score, -3.0f);
  EXPECT_EQ(m.model_type, SentencePieceModel::ModelType::kBpe);
  EXPECT_TRUE(m.byte_fallback);
  EXPECT_EQ(m.pad_id, -1);  // a negative int32: a 10-byte varint
  EXPECT_EQ(m.unk_id, 0);   // absent: the proto's defaults
  EXPECT_EQ(m.eos_id, 2);
  EXPECT_EQ(m.eos_piece, "</s>");
  EXPECT_EQ(m.normalizer_name, "identity");
  EXPECT_FALSE(m.add_dummy_prefix);
  EXPECT_TRUE(m.remove_extra_whitespaces);
  EXPECT_TRUE(m.precompiled_charsmap.empty());
}

TEST(SentencePieceModel, MalformedDataIsRefusedNamingTheFile) {
  const std::string good = small_bpe_model(true);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no pieces"},
      {good.substr(0, good.size() - 3), "beyond the end"},
      {good + "\xff", "inside a number"},
      {good + bytes(2, bytes(3, "x")), "model_type is not a number"},
      {good + bytes(2, number(40, 50)), "special id beyond"},
      {good + varint((1 << 3) | 3), "a piece is not a string or message"},
      {good + varint((7 << 3) | 3), "wire type 3"},
      {good + bytes(1, number(3, 9)), "piece type 9"},
      {"{\"model\": {}}", "not a SentencePiece model"},
  };
  for (const auto& [data, expected] : cases) {
    try {
      SentencePieceModel::parse(data, "folder/tokenizer.model");
      ADD_FAILURE() << "parsed: " << expected;
    } catch (const ctrainer::ArgumentError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("folder/tokenizer.model"), std::string::npos) << message;
      EXPECT_NE(message.find(expected), std::string::npos) << expected << ": " << message;
    }
  }
}

class SentencePieceFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ctrainer_spm_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
  }
  json built(const json& config, const std::string& class_name) {
    return ctrainer::tokenizers::tokenizer_from_sentencepiece(dir_, config, class_name)
        ->tokenizer_json;
  }
  fs::path dir_;
};

TEST_F(SentencePieceFolder, MergesFollowScoresGenericallyAndPieceIdsForLlama) {
  write("tokenizer.model", small_bpe_model(true));
  const std::string s = "\xE2\x96\x81";
  // The generic path: normal pieces only, the best-scored merged piece first.
  EXPECT_EQ(built(json::object(), "")["model"]["merges"],
            json::parse(R"([[")" + s + R"(", "a"], [")" + s + R"(", "ab"], [")" + s +
                        R"(a", "b"], ["a", "b"]])"));
  EXPECT_EQ(built(json::object(), "")["model"]["unk_token"], "<unk>");
  // LlamaTokenizer: every split of every piece by the merged piece's id, shorter left first.
  const json llama = built(json::object(), "LlamaTokenizerFast");
  EXPECT_EQ(llama["model"]["merges"], json::parse(R"([[")" + s + R"(", "a"], ["a", "b"], [")" + s +
                                                  R"(", "ab"], [")" + s + R"(a", "b"]])"));
  EXPECT_TRUE(llama["model"]["unk_token"].is_null());
  EXPECT_TRUE(llama["normalizer"].is_null());
}

TEST_F(SentencePieceFolder, T5AppendsItsSentinelsAndOtherClassesAreRefusedByName) {
  write("spiece.model", small_bpe_model(true));
  const json t5 = built({{"extra_ids", 2}}, "T5Tokenizer");
  EXPECT_EQ(t5["model"]["type"], "Unigram");
  EXPECT_EQ(t5["model"]["unk_id"], 2);  // as transformers' T5Tokenizer, whatever the model says
  EXPECT_EQ(t5["model"]["vocab"].size(), 11u);
  EXPECT_EQ(t5["model"]["vocab"][9][0], "<extra_id_1>");
  EXPECT_EQ(t5["model"]["vocab"][10][0], "<extra_id_0>");
  // Only T5 reads spiece.model; the others look for tokenizer.model.
  EXPECT_FALSE(ctrainer::tokenizers::tokenizer_from_sentencepiece(dir_, json::object(), ""));
  write("tokenizer.model", small_bpe_model(true));
  try {
    built(json::object(), "AlbertTokenizer");
    ADD_FAILURE() << "AlbertTokenizer was built";
  } catch (const ctrainer::ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("AlbertTokenizer"), std::string::npos) << e.what();
  }
}

TEST_F(SentencePieceFolder, AutoTokenizerReadsAModelWithoutTokenizerJson) {
  write("tokenizer.model", small_bpe_model(true));
  std::ofstream(dir_ / "tokenizer_config.json")
      << R"({"tokenizer_class": "LlamaTokenizer", "add_bos_token": true})";
  const auto tokenizer = ctrainer::AutoTokenizer::from_pretrained(dir_.string());
  const auto e = tokenizer->encode("ab ab");
  // <s>, then "▁ab" twice (Metaspace "first": each word gets its ▁ from the space).
  EXPECT_EQ(e.input_ids, (std::vector<int64_t>{1, 8, 8}));
  EXPECT_EQ(tokenizer->decode(e.input_ids, true), "ab ab");
  EXPECT_EQ(tokenizer->padding_side(), ctrainer::Side::kLeft);  // LlamaTokenizer's default
}

}  // namespace sentencepiece_model_test
