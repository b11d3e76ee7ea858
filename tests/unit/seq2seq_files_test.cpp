// run_summarization / run_translation's data files: CSV as pandas reads it, JSON records as
// datasets' json loader reads them, translation pairs; bad files named with their line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <ctrainer/core/errors.h>
#include <ctrainer/examples/seq2seq/seq2seq_files.h>

#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer {
namespace seq2seq_files_test {

using run_seq2seq::parse_csv;
using run_seq2seq::parse_json_records;
using testing::expect_error;
using Row = std::vector<std::optional<std::string>>;

TEST(Seq2SeqCsv, QuotesLineBreaksBomCrlfAndMissingCells) {
  const auto table = parse_csv(
      "\xEF\xBB\xBFtext,summary\r\n\"a, b\",\"say \"\"hi\"\"\"\r\n\r\n\"two\nlines\",\nx,y",
      "f.csv");
  EXPECT_EQ(table.columns, (std::vector<std::string>{"text", "summary"}));
  ASSERT_EQ(table.rows.size(), 3u);  // the blank line is skipped, as pandas does
  EXPECT_EQ(table.rows[0], (Row{"a, b", "say \"hi\""}));
  EXPECT_EQ(table.rows[1], (Row{"two\nlines", std::nullopt}));  // an empty field is None
  EXPECT_EQ(table.rows[2], (Row{"x", "y"}));
  EXPECT_EQ(table.column("summary", "f.csv"), 1u);
  expect_error([&] { table.column("document", "f.csv"); },
               {"f.csv: no column 'document'", "text, summary"});
}

TEST(Seq2SeqCsv, BadFilesAreNamedWithTheirLine) {
  expect_error([] { parse_csv("a,b\n1,2\n\"open,3\n", "f.csv"); },
               {"f.csv:3: a quoted field is never closed"});
  expect_error([] { parse_csv("a,b\n1,2,3\n", "f.csv"); },
               {"f.csv:2: expected 2 fields as in the header, saw 3"});
  expect_error([] { parse_csv("a,b\n1,x\"y\n", "f.csv"); }, {"f.csv:2: a quote inside"});
  expect_error([] { parse_csv("a,a\n", "f.csv"); }, {"names 'a' twice"});
  expect_error([] { parse_csv("\n\n", "f.csv"); }, {"no header row"});
}

TEST(Seq2SeqJson, LinesOrAnArrayColumnsInFileOrder) {
  const auto lines = parse_json_records(
      "{\"text\": \"t1\", \"summary\": null}\n\n{\"summary\": \"s2\", \"id\": \"7\"}\n", "f.jsonl");
  EXPECT_EQ(lines.columns, (std::vector<std::string>{"text", "summary", "id"}));
  EXPECT_EQ(lines.rows[0], (Row{"t1", std::nullopt, std::nullopt}));
  EXPECT_EQ(lines.rows[1], (Row{std::nullopt, "s2", "7"}));
  const auto array = parse_json_records("[{\"z\": \"1\", \"a\": \"2\"}]", "f.json");
  EXPECT_EQ(array.columns, (std::vector<std::string>{"z", "a"}));
  expect_error([] { parse_json_records("{\"text\": 3}\n", "f.jsonl"); },
               {"f.jsonl:1", "\"text\" must be a text"});
  expect_error([] { parse_json_records("{\"a\": \"1\"}\n{oops\n", "f.jsonl"); },
               {"f.jsonl:2: not valid JSON"});
  expect_error([] { parse_json_records("[1]", "f.json"); }, {"must be a JSON object"});
  // A number too large for a double is nlohmann's out_of_range.406, not a parse_error.
  expect_error([] { parse_json_records("{\"a\": \"1\"}\n{\"b\": 1e400}\n", "f.jsonl"); },
               {"f.jsonl:2: not valid JSON", "number overflow"});
}

TEST(Seq2SeqJson, TranslationPairsByLanguage) {
  const auto path = std::filesystem::path(testing::fresh_output_dir("pairs")) / "p.jsonl";
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << "{\"translation\": {\"de\": \"Hallo\", \"en\": \"Hello\"}}\n"
                         "{\"translation\": {\"en\": \"Yes\", \"de\": \"Ja\"}}\n";
  const auto pairs = run_seq2seq::read_translation_pairs(path.string(), "en", "de");
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0], (std::pair<std::string, std::string>{"Hello", "Hallo"}));
  EXPECT_EQ(pairs[1], (std::pair<std::string, std::string>{"Yes", "Ja"}));
  expect_error([&] { run_seq2seq::read_translation_pairs(path.string(), "en", "fr"); },
               {"record 1", "no \"fr\" text", "--target_lang"});
  std::ofstream(path) << "{\"text\": \"no translation\"}\n";
  expect_error([&] { run_seq2seq::read_translation_pairs(path.string(), "en", "de"); },
               {"no column 'translation'"});
}

}  // namespace seq2seq_files_test
}  // namespace ctrainer
