#pragma once
// A run_glue workload small enough for multi-process end-to-end tests on 2 cores: the first 96
// training and 41 dev pairs of the bundled MRPC, a 1-layer 16-wide BERT with dropout on (so the
// ranks' RNG streams matter too), sequences of 32, 8 pairs per device, a checkpoint every 3 steps.
// Used by the torchrun and multi-node tests to compare launches of the same job. No torch here.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/glue_files.h"

namespace ctrainer::testing {

/// Writes `dir`/data/{train,dev}.tsv and `dir`/config.json from the MRPC of `examples_data_dir`
/// (CTRAINER_EXAMPLES_DATA_DIR).
inline void write_tiny_mrpc(const std::filesystem::path& dir,
                            const std::filesystem::path& examples_data_dir) {
  const std::filesystem::path mrpc = examples_data_dir / "glue" / "MRPC";
  std::filesystem::create_directories(dir / "data");
  write_slice(mrpc / "train.tsv", dir / "data" / "train.tsv", 96, true);
  write_slice(mrpc / "dev.tsv", dir / "data" / "dev.tsv", 41, true);
  std::ofstream(dir / "config.json") << R"({"model_type": "bert", "vocab_size": 30522,
      "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "intermediate_size": 32, "max_position_embeddings": 64})";
}

/// run_glue's flags for the workload of write_tiny_mrpc(`dir`): `epochs` epochs, a log every 2
/// steps, a checkpoint every 3, into `dir`/`out` with its own tokenization cache `dir`/`out`.cache.
inline std::vector<std::string> tiny_mrpc_flags(const std::filesystem::path& dir,
                                                const std::filesystem::path& examples_data_dir,
                                                const std::string& out, int epochs) {
  return {"--task_name",
          "mrpc",
          "--data_dir",
          (dir / "data").string(),
          "--config_name",
          (dir / "config.json").string(),
          "--tokenizer_name",
          (examples_data_dir / "vocab" / "bert-base-uncased-vocab.txt").string(),
          "--output_dir",
          (dir / out).string(),
          "--cache_dir",
          (dir / (out + ".cache")).string(),
          "--do_train",
          "--do_eval",
          "--max_seq_length",
          "32",
          "--num_train_epochs",
          std::to_string(epochs),
          "--per_device_train_batch_size",
          "8",
          "--per_device_eval_batch_size",
          "8",
          "--learning_rate",
          "1e-3",
          "--logging_steps",
          "2",
          "--save_steps",
          "3",
          "--report_to",
          "none",
          "--disable_tqdm",
          "true"};
}

/// The logged training losses of `output_dir`/trainer_log.jsonl (written by the main process).
inline std::vector<double> logged_losses(const std::filesystem::path& output_dir) {
  std::vector<double> losses;
  std::ifstream in(output_dir / "trainer_log.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto entry = nlohmann::json::parse(line);
    if (entry.contains("loss")) losses.push_back(entry["loss"].get<double>());
  }
  return losses;
}

/// A JSON file, or null when it does not exist (a run that failed wrote none).
inline nlohmann::json read_json_if_exists(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json();
  return nlohmann::json::parse(in);
}

inline std::string read_binary_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace ctrainer::testing
