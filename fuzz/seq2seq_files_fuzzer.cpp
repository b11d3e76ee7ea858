// run_summarization / run_translation's data readers on arbitrary bytes: the first byte picks
// CSV, JSON records or run_translation's "translation" pairs; the rest is the file. Bad input
// throws ArgumentError naming the file and line. A CSV table that parses must survive a round
// trip: written back with every field quoted, it parses to the same table.
#include <ctrainer/core/errors.h>
#include <ctrainer/examples/seq2seq/seq2seq_files.h>

#include "fuzz_support.h"

namespace {

std::string quoted(const std::string& field) {
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string to_csv(const run_seq2seq::TextTable& table) {
  std::string out;
  for (size_t c = 0; c < table.columns.size(); ++c)
    out += (c ? "," : "") + quoted(table.columns[c]);
  for (const auto& row : table.rows) {
    out += "\n";
    // A missing cell is written as a quoted empty field, which reads back as missing: an
    // unquoted one would make the row of a one-column table a blank line, which is skipped.
    for (size_t c = 0; c < row.size(); ++c) out += (c ? "," : "") + quoted(row[c].value_or(""));
  }
  return out + "\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  if (size == 0) return 0;
  const std::string_view bytes = ctrainer::fuzz::bytes_of(data + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: {
        const run_seq2seq::TextTable table = run_seq2seq::parse_csv(bytes, "data.csv");
        const run_seq2seq::TextTable again = run_seq2seq::parse_csv(to_csv(table), "again.csv");
        if (again.columns != table.columns || again.rows != table.rows) std::abort();
        break;
      }
      case 1: {
        const run_seq2seq::TextTable table = run_seq2seq::parse_json_records(bytes, "data.jsonl");
        for (const auto& row : table.rows)
          if (row.size() != table.columns.size()) std::abort();
        break;
      }
      default: {
        const auto path = ctrainer::fuzz::scratch_file("pairs.jsonl", bytes);
        run_seq2seq::read_translation_pairs(path.string(), "en", "de");
      }
    }
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
