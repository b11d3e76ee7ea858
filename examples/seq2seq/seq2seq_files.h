#pragma once
// The data files of run_summarization and run_translation, read as HF datasets' "csv" and
// "json" loaders read them: a table of text columns in the file's column order.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace run_seq2seq {

/// Rows of text cells under named columns; a missing cell (an empty CSV field, a JSON null or
/// absent key) is nothing, as datasets gives None.
struct TextTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;

  /// The index of column `name`; throws ArgumentError naming `source`, the column and the
  /// columns there are.
  size_t column(const std::string& name, const std::string& source) const;
};

/// A CSV text (RFC 4180, as pandas reads it: a header row, ',' separators, '"' quoting with ""
/// inside quotes, line breaks inside quotes kept, LF or CRLF line ends, a UTF-8 BOM skipped).
/// Throws ArgumentError naming `source` and the line for an unterminated quote, a row with a
/// different number of fields than the header, an empty or duplicate header.
TextTable parse_csv(std::string_view text, const std::string& source);

/// JSON lines (one object per non-blank line) or one JSON array of objects; the columns are
/// the keys in their order of first appearance. Values must be strings or null (a nested object
/// such as run_translation's "translation" is kept as its JSON text). Throws ArgumentError
/// naming `source`, the line and the key.
TextTable parse_json_records(std::string_view text, const std::string& source);

/// parse_csv or parse_json_records of the file `path` by its extension (.csv, .json, .jsonl).
TextTable read_table(const std::string& path);

/// run_translation's records: each row's "translation" object's `source_lang` and
/// `target_lang` texts. Throws ArgumentError naming `path`, the row and the missing key.
std::vector<std::pair<std::string, std::string>> read_translation_pairs(
    const std::string& path, const std::string& source_lang, const std::string& target_lang);

}  // namespace run_seq2seq
