#include <ctrainer/examples/glue/glue_features.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include <ctrainer/core/errors.h>

namespace ctrainer::glue {
namespace {

/// Examples per unit of work: small enough to balance threads, large enough to amortise.
constexpr int64_t kChunk = 512;

struct ChunkResult {
  TokenizedData data;
  std::exception_ptr error;
};

void tokenize_chunk(const GlueSplit& split, const Tokenizer& tokenizer, const EncodeOptions& encode,
                    int64_t begin, int64_t end, ChunkResult& out) {
  for (int64_t i = begin; i < end; ++i) {
    const GlueExample& ex = split.examples[static_cast<size_t>(i)];
    Encoding enc;
    try {
      enc = ex.text_b ? tokenizer.encode(ex.text_a, std::string_view(*ex.text_b), encode)
                      : tokenizer.encode(ex.text_a, std::nullopt, encode);
    } catch (const std::exception& e) {
      out.error = std::make_exception_ptr(
          ArgumentError(split.source + ":" + std::to_string(ex.line) + ": " + e.what()));
      return;
    }
    out.data.append_tokens(enc.input_ids, enc.token_type_ids, enc.attention_mask);
  }
}

}  // namespace

EncodeOptions encode_options(const TokenizeOptions& options) {
  EncodeOptions encode;
  encode.max_length = options.max_seq_length;
  encode.truncation = Truncation::kLongestFirst;
  encode.padding = options.pad_to_max_length ? Padding::kMaxLength : Padding::kNone;
  return encode;
}

std::shared_ptr<TokenizedDataset> tokenize_split(const GlueSplit& split, const Tokenizer& tokenizer,
                                                 const TokenizeOptions& options) {
  if (options.max_seq_length < 2)
    throw ArgumentError("--max_seq_length must be >= 2 to hold [CLS] and [SEP], got " +
                        std::to_string(options.max_seq_length));
  const EncodeOptions encode = encode_options(options);
  const int64_t n = split.size();
  const int64_t num_chunks = (n + kChunk - 1) / kChunk;
  std::vector<ChunkResult> chunks(static_cast<size_t>(num_chunks));
  int64_t threads = options.num_threads > 0
                        ? options.num_threads
                        : static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::max<int64_t>(1, std::min(threads, num_chunks));

  std::atomic<int64_t> next_chunk{0};
  auto work = [&] {
    for (int64_t c = next_chunk++; c < num_chunks; c = next_chunk++) {
      const int64_t begin = c * kChunk;
      tokenize_chunk(split, tokenizer, encode, begin, std::min(n, begin + kChunk),
                     chunks[static_cast<size_t>(c)]);
    }
  };
  if (threads == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < threads; ++t) pool.emplace_back(work);
    for (auto& thread : pool) thread.join();
  }

  TokenizedData data;
  int64_t total_tokens = 0;
  for (const auto& chunk : chunks) {
    // The first failing example in file order is reported, whichever thread met it first.
    if (chunk.error) std::rethrow_exception(chunk.error);
    total_tokens += chunk.data.num_tokens();
  }
  data.input_ids.reserve(static_cast<size_t>(total_tokens));
  data.token_type_ids.reserve(static_cast<size_t>(total_tokens));
  data.attention_mask.reserve(static_cast<size_t>(total_tokens));
  data.offsets.reserve(static_cast<size_t>(n) + 1);
  for (const auto& chunk : chunks) {
    const int64_t base = data.num_tokens();
    data.input_ids.insert(data.input_ids.end(), chunk.data.input_ids.begin(),
                          chunk.data.input_ids.end());
    data.token_type_ids.insert(data.token_type_ids.end(), chunk.data.token_type_ids.begin(),
                               chunk.data.token_type_ids.end());
    data.attention_mask.insert(data.attention_mask.end(), chunk.data.attention_mask.begin(),
                               chunk.data.attention_mask.end());
    for (size_t i = 1; i < chunk.data.offsets.size(); ++i)
      data.offsets.push_back(base + chunk.data.offsets[i]);
  }
  if (split.has_labels) {
    data.label_kind = split.is_regression ? LabelKind::kScore : LabelKind::kClass;
    for (const auto& ex : split.examples) {
      if (split.is_regression ? !ex.score : !ex.label)
        throw ArgumentError(split.source + ":" + std::to_string(ex.line) +
                            ": the example has no label although split " + split.split +
                            " is labeled");
      if (split.is_regression)
        data.scores.push_back(*ex.score);
      else
        data.labels.push_back(*ex.label);
    }
  }
  return std::make_shared<TokenizedDataset>(std::move(data));
}

}  // namespace ctrainer::glue
