#include "seq2seq_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>

namespace run_seq2seq {
namespace {
using ctrainer::ArgumentError;
using OrderedJson = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ArgumentError(path + ": cannot be read (does it exist?)");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// Splits CSV text into records of fields; `lines[i]` is the line record i starts on.
std::vector<std::vector<std::string>> csv_records(std::string_view text, const std::string& source,
                                                  std::vector<int64_t>& lines,
                                                  std::vector<std::vector<bool>>& quoted) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> fields;
  std::vector<bool> field_quoted;
  std::string field;
  bool in_quotes = false, was_quoted = false, record_started = false;
  int64_t line = 1, record_line = 1, quote_line = 1;
  auto end_field = [&] {
    fields.push_back(std::move(field));
    field_quoted.push_back(was_quoted);
    field.clear();
    was_quoted = false;
  };
  auto end_record = [&] {
    end_field();
    records.push_back(std::move(fields));
    quoted.push_back(std::move(field_quoted));
    lines.push_back(record_line);
    fields.clear();
    field_quoted.clear();
    record_started = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!record_started) {
      record_started = true;
      record_line = line;
    }
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty() && !was_quoted) {
      in_quotes = was_quoted = true;
      quote_line = line;
    } else if (c == '"') {
      throw ArgumentError(source + ":" + std::to_string(line) +
                          ": a quote inside an unquoted field; quote the whole field and double "
                          "the quotes inside it (\"say \"\"hi\"\"\")");
    } else if (c == ',') {
      end_field();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_record();
      ++line;
    } else {
      if (was_quoted)
        throw ArgumentError(source + ":" + std::to_string(line) +
                            ": text after a quoted field's closing quote");
      field += c;
    }
  }
  if (in_quotes)
    throw ArgumentError(source + ":" + std::to_string(quote_line) +
                        ": a quoted field is never closed (a missing '\"')");
  if (record_started) end_record();
  return records;
}

}  // namespace

size_t TextTable::column(const std::string& name, const std::string& source) const {
  const auto it = std::find(columns.begin(), columns.end(), name);
  if (it != columns.end()) return static_cast<size_t>(it - columns.begin());
  std::string present;
  for (const auto& c : columns) present += (present.empty() ? "" : ", ") + c;
  throw ArgumentError(source + ": no column '" + name + "' (the columns are: " + present + ")");
}

TextTable parse_csv(std::string_view text, const std::string& source) {
  std::vector<int64_t> lines;
  std::vector<std::vector<bool>> quoted;
  std::vector<std::vector<std::string>> records = csv_records(text, source, lines, quoted);
  // pandas skips blank lines.
  TextTable table;
  size_t first = 0;
  auto blank = [&](size_t r) {
    return records[r].size() == 1 && records[r][0].empty() && !quoted[r][0];
  };
  while (first < records.size() && blank(first)) ++first;
  if (first == records.size()) throw ArgumentError(source + ": the CSV file has no header row");
  table.columns = records[first];
  for (size_t c = 0; c < table.columns.size(); ++c) {
    if (table.columns[c].empty())
      throw ArgumentError(source + ":" + std::to_string(lines[first]) + ": column " +
                          std::to_string(c + 1) + " of the header has no name");
    if (std::count(table.columns.begin(), table.columns.end(), table.columns[c]) > 1)
      throw ArgumentError(source + ":" + std::to_string(lines[first]) + ": the header names '" +
                          table.columns[c] + "' twice");
  }
  for (size_t r = first + 1; r < records.size(); ++r) {
    if (blank(r)) continue;
    if (records[r].size() != table.columns.size())
      throw ArgumentError(source + ":" + std::to_string(lines[r]) + ": expected " +
                          std::to_string(table.columns.size()) + " fields as in the header, saw " +
                          std::to_string(records[r].size()));
    std::vector<std::optional<std::string>> row;
    for (std::string& cell : records[r]) {
      if (cell.empty())
        row.emplace_back(std::nullopt);  // pandas reads an empty field as NaN (datasets: None)
      else
        row.emplace_back(std::move(cell));
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

TextTable parse_json_records(std::string_view text, const std::string& source) {
  std::vector<std::pair<int64_t, OrderedJson>> objects;
  auto parse = [&](std::string_view part, int64_t line) {
    try {
      return OrderedJson::parse(part);
    } catch (const nlohmann::json::exception& e) {
      // parse_error, and out_of_range.406 for a number too large for a double (1e400).
      throw ArgumentError(source + ":" + std::to_string(line) + ": not valid JSON (" + e.what() +
                          ")");
    }
  };
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start != std::string_view::npos && text[start] == '[') {
    const OrderedJson all = parse(text, 1);
    for (const auto& item : all) objects.emplace_back(1, item);
  } else {
    int64_t line = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
      const size_t end = std::min(text.find('\n', pos), text.size());
      ++line;
      const std::string_view part = text.substr(pos, end - pos);
      if (part.find_first_not_of(" \t\r") != std::string_view::npos)
        objects.emplace_back(line, parse(part, line));
      pos = end + 1;
    }
  }
  TextTable table;
  for (const auto& [line, object] : objects) {
    if (!object.is_object())
      throw ArgumentError(source + ":" + std::to_string(line) +
                          ": each record must be a JSON object, found " + object.type_name());
    for (const auto& item : object.items())
      if (std::find(table.columns.begin(), table.columns.end(), item.key()) == table.columns.end())
        table.columns.push_back(item.key());
  }
  for (const auto& [line, object] : objects) {
    std::vector<std::optional<std::string>> row;
    for (const std::string& key : table.columns) {
      if (!object.contains(key) || object[key].is_null()) {
        row.emplace_back(std::nullopt);
      } else if (object[key].is_string()) {
        row.emplace_back(object[key].get<std::string>());
      } else if (object[key].is_object()) {
        row.emplace_back(object[key].dump());
      } else {
        throw ArgumentError(source + ":" + std::to_string(line) + ": \"" + key +
                            "\" must be a text (or null), found " + object[key].type_name());
      }
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

TextTable read_table(const std::string& path) {
  const std::string text = read_file(path);
  if (std::filesystem::path(path).extension() == ".csv") return parse_csv(text, path);
  return parse_json_records(text, path);
}

std::vector<std::pair<std::string, std::string>> read_translation_pairs(
    const std::string& path, const std::string& source_lang, const std::string& target_lang) {
  const TextTable table = parse_json_records(read_file(path), path);
  const size_t column = table.column("translation", path);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::string where = path + ": record " + std::to_string(r + 1);
    const auto& cell = table.rows[r][column];
    if (!cell) throw ArgumentError(where + " has no \"translation\" object");
    const nlohmann::json translation = nlohmann::json::parse(*cell, nullptr, false);
    if (!translation.is_object())
      throw ArgumentError(where + ": \"translation\" must be an object of texts by language");
    for (const std::string& lang : {source_lang, target_lang})
      if (!translation.contains(lang) || !translation[lang].is_string())
        throw ArgumentError(where + ": its \"translation\" has no \"" + lang +
                            "\" text (check --source_lang / --target_lang)");
    pairs.emplace_back(translation[source_lang].get<std::string>(),
                       translation[target_lang].get<std::string>());
  }
  return pairs;
}

}  // namespace run_seq2seq
