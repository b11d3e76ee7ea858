// GenerationConfig (generation_config.json) read and written as transformers does, its layering
// (call over model file over global defaults), the refusals, and LogitsProcessors on closed
// forms. Parity with transformers' LogitsProcessorList: tests/parity/logits_processors_parity.py.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/generation/generation_config.h>
#include <ctrainer/models/generation/logits_processors.h>

namespace ctrainer::generation {
namespace generation_config_test {

using nlohmann::json;
namespace fs = std::filesystem;

std::string refusal(const json& j) {
  try {
    GenerationConfig::from_json(j, "gen.json");
  } catch (const ArgumentError& e) {
    return e.what();
  }
  return "";
}

std::string refusal_of_model_config(const json& j) {
  try {
    GenerationConfig::from_model_config(j, "config.json");
  } catch (const ArgumentError& e) {
    return e.what();
  }
  return "";
}

TEST(GenerationConfig, ReadsATransformersFileAndWritesItBackAsRead) {
  // facebook/bart-large-cnn's file, plus a list-valued eos and keys that change no token.
  const json file = json::parse(R"({
    "bos_token_id": 0, "decoder_start_token_id": 2, "early_stopping": true, "eos_token_id": [2],
    "forced_bos_token_id": 0, "forced_eos_token_id": 2, "length_penalty": 2.0, "max_length": 142,
    "min_length": 56, "no_repeat_ngram_size": 3, "num_beams": 4, "pad_token_id": 1,
    "output_scores": false, "transformers_version": "5.24.0", "top_p": null})");
  const auto config = GenerationConfig::from_json(file, "gen.json");
  EXPECT_EQ(config.num_beams, 4);
  EXPECT_EQ(config.eos_token_id->ids, std::vector<int64_t>{2});
  EXPECT_EQ(config.forced_eos_token_id->ids, std::vector<int64_t>{2});
  EXPECT_FALSE(config.top_p.has_value());
  json expected = file;
  expected.erase("top_p");  // nulls are not written, as transformers' use_diff drops them
  EXPECT_EQ(config.to_json(), expected);
}

TEST(GenerationConfig, UnimplementedFeaturesAreRefusedByNameUnlessTurnedOff) {
  EXPECT_NE(refusal({{"typical_p", 0.9}}).find("\"typical_p\" is not supported"),
            std::string::npos);
  EXPECT_NE(refusal({{"num_beam_groups", 2}}).find("num_beam_groups"), std::string::npos);
  EXPECT_NE(refusal({{"penalty_alpha", 0.6}}).find("penalty_alpha"), std::string::npos);
  EXPECT_NE(refusal({{"sequence_bias", {{{1}, 2.0}}}}).find("sequence_bias"), std::string::npos);
  const json off = {{"typical_p", 1.0},
                    {"num_beam_groups", 1},
                    {"penalty_alpha", nullptr},
                    {"renormalize_logits", false}};
  EXPECT_EQ(refusal(off), "");
  const json written = GenerationConfig::from_json(off, "gen.json").to_json();
  EXPECT_EQ(written,
            json({{"typical_p", 1.0}, {"num_beam_groups", 1}, {"renormalize_logits", false}}));
}

TEST(GenerationConfig, AValueOfTheWrongKindNamesTheFileAndTheKey) {
  EXPECT_EQ(refusal({{"top_k", 1.5}}), "gen.json: \"top_k\" must be an integer, got 1.5");
  EXPECT_EQ(refusal({{"max_new_tokens", 0}}),
            "gen.json: \"max_new_tokens\" must be at least 1, got 0");
  EXPECT_NE(refusal({{"eos_token_id", -1}}).find("\"eos_token_id\""), std::string::npos);
  EXPECT_NE(refusal({{"eos_token_id", json::array()}}).find("at least one"), std::string::npos);
  EXPECT_NE(refusal({{"early_stopping", "sometimes"}}).find("\"never\""), std::string::npos);
  EXPECT_NE(refusal({{"bad_words_ids", {json::array()}}}).find("empty list"), std::string::npos);
  EXPECT_NE(refusal({{"do_sample", "yes"}}).find("true or false"), std::string::npos);
  EXPECT_NE(refusal(json::array()).find("expected a JSON object"), std::string::npos);
}

TEST(GenerationConfig, ACallsSettingsWinOverTheModelsFileWhichWinsOverGlobalDefaults) {
  const auto call = GenerationConfig::from_json({{"temperature", 0.5}}, "call");
  const auto model = GenerationConfig::from_json(
      {{"temperature", 0.9}, {"top_k", 10}, {"eos_token_id", 2}, {"transformers_version", "5"}},
      "model");
  const auto resolved = call.merged_over(model).with_global_defaults();
  EXPECT_EQ(resolved.temperature, 0.5);
  EXPECT_EQ(resolved.top_k, 10);
  EXPECT_EQ(resolved.eos_token_id->ids, std::vector<int64_t>{2});
  EXPECT_EQ(resolved.max_length, 20);
  EXPECT_EQ(resolved.num_beams, 1);
  EXPECT_EQ(resolved.do_sample, false);
  EXPECT_EQ(resolved.top_p, 1.0);
  EXPECT_FALSE(resolved.max_new_tokens.has_value());
  EXPECT_EQ(resolved.other.at("transformers_version"), "5");
}

TEST(GenerationConfig, SavedFolderReadsBackAndAMissingFileIsNamed) {
  const fs::path folder =
      fs::temp_directory_path() / ("gen_config_test_" + std::to_string(::getpid()));
  const auto config = GenerationConfig::from_json(
      {{"do_sample", true}, {"top_p", 0.9}, {"eos_token_id", {1, 2}}}, "gen.json");
  config.save_pretrained(folder);
  EXPECT_EQ(GenerationConfig::from_file(folder).to_json(), config.to_json());
  fs::remove_all(folder);
  try {
    GenerationConfig::from_file(folder);
    FAIL() << "a missing folder was read";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find(folder.string()), std::string::npos);
  }
}

TEST(GenerationConfig, AKeyTransformersDoesNotHaveIsRefusedByName) {
  // A misspelt setting would otherwise change nothing, silently.
  EXPECT_NE(refusal({{"tempreature", 0.7}}).find("\"tempreature\" is not a setting"),
            std::string::npos);
  EXPECT_EQ(refusal({{"output_scores", true}, {"_from_model_config", true},
                     {"cache_implementation", "dynamic"}}),
            "");
}

TEST(GenerationConfig, AModelFolderWithoutTheFileTakesConfigJsonsGenerationKeys) {
  // transformers' from_model_config: the generation keys of config.json, nothing else.
  const json model_config = {{"model_type", "gpt2"}, {"vocab_size", 50},        {"bos_token_id", 1},
                             {"eos_token_id", 2},    {"pad_token_id", nullptr}, {"num_beams", 4},
                             {"use_cache", true}};
  const auto config = GenerationConfig::from_model_config(model_config, "config.json");
  EXPECT_EQ(
      config.to_json(),
      json({{"bos_token_id", 1}, {"eos_token_id", 2}, {"num_beams", 4}, {"use_cache", true}}));
  EXPECT_NE(refusal_of_model_config({{"num_beam_groups", 2}}).find("num_beam_groups"),
            std::string::npos);

  const fs::path folder =
      fs::temp_directory_path() / ("gen_model_folder_test_" + std::to_string(::getpid()));
  fs::create_directories(folder);
  { std::ofstream(folder / "config.json") << model_config.dump(); }
  EXPECT_EQ(GenerationConfig::for_model_folder(folder).to_json(), config.to_json());
  // A generation_config.json wins over config.json, as in transformers.
  GenerationConfig::from_json({{"max_new_tokens", 5}}, "gen.json").save_pretrained(folder);
  EXPECT_EQ(GenerationConfig::for_model_folder(folder).to_json(), json({{"max_new_tokens", 5}}));
  fs::remove_all(folder);
  fs::create_directories(folder);
  try {
    GenerationConfig::for_model_folder(folder);
    FAIL() << "a folder without config.json was read";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("nor config.json"), std::string::npos);
  }
  fs::remove_all(folder);
}

TEST(LogitsProcessors, RepetitionPenaltyDividesPositiveAndMultipliesNegativeScores) {
  const auto config =
      GenerationConfig::from_json({{"repetition_penalty", 2.0}}, "gen.json").with_global_defaults();
  const LogitsProcessors processors(config, 2);
  EXPECT_EQ(processors.names(), std::vector<std::string>{"RepetitionPenaltyLogitsProcessor"});
  const auto out = processors(at::tensor({0, 1, 0}, at::kLong).reshape({1, 3}),
                              at::tensor({1.0f, -2.0f, 3.0f, 0.5f}).reshape({1, 4}));
  EXPECT_TRUE(at::equal(out, at::tensor({0.5f, -4.0f, 3.0f, 0.5f}).reshape({1, 4})));
}

TEST(LogitsProcessors, SamplingKeepsTheTopKAndGreedyLeavesScoresAlone) {
  const auto sampling = GenerationConfig::from_json({{"do_sample", true}, {"top_k", 2}}, "gen.json")
                            .with_global_defaults();
  const LogitsProcessors top2(sampling, 1);
  const auto ids = at::zeros({1, 1}, at::kLong);
  const auto out = top2(ids, at::tensor({1.0f, 4.0f, 3.0f, 2.0f}).reshape({1, 4}));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(at::equal(out, at::tensor({-inf, 4.0f, 3.0f, -inf}).reshape({1, 4})));
  // Greedy (the default) builds no step for the same top_k.
  const auto greedy =
      GenerationConfig::from_json({{"top_k", 2}}, "gen.json").with_global_defaults();
  EXPECT_TRUE(LogitsProcessors(greedy, 1).names().empty());
}

TEST(LogitsProcessors, ATokenIdOutsideTheVocabularyIsNamedNotRead) {
  const auto config =
      GenerationConfig::from_json({{"forced_bos_token_id", 10}}, "gen.json").with_global_defaults();
  const LogitsProcessors processors(config, 1);
  try {
    processors(at::zeros({1, 1}, at::kLong), at::zeros({1, 4}));
    FAIL() << "an out-of-vocabulary forced_bos_token_id was accepted";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("forced_bos_token_id: token id 10"), std::string::npos);
  }
}

}  // namespace generation_config_test
}  // namespace ctrainer::generation
