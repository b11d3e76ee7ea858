// ctrainer-tokenize: prints the encoding of each stdin line as one JSON object, to debug
// tokenization and to compare it with HF's tokenizers. One column = a text, two tab-separated
// columns = a pair (or, with --input_format jsonl, ["text"] / ["text", "pair"] per line, for
// texts holding tabs or newlines).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/tokenizer_registry.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>

namespace {

using nlohmann::json;

constexpr const char* kUsage =
    "usage: ctrainer-tokenize (--tokenizer_name PATH | --vocab FILE [--do_lower_case true|false])\n"
    "                         [--add_special_tokens true|false] [--max_length N]\n"
    "                         [--truncation longest_first|only_first|only_second]\n"
    "                         [--truncation_side right|left] [--padding max_length]\n"
    "                         [--pad_to_multiple_of N] [--padding_side right|left]\n"
    "                         [--input_format tsv|jsonl] [--decode] [--continue_on_error]\n"
    "                         [--save_to DIR] [--return_overflowing_tokens [--stride N]]\n"
    "\n"
    "--tokenizer_name: a model folder (tokenizer.json, or vocab.txt + tokenizer_config.json) or a\n"
    "tokenizer.json file, read as transformers' AutoTokenizer reads it. --vocab: a WordPiece\n"
    "vocab.txt. Reads lines from stdin: one column = a text, two tab-separated columns = a pair\n"
    "(jsonl: a JSON array of one or two strings per line). Prints one JSON object per line with\n"
    "input_ids, token_type_ids, attention_mask, and for tokenizer.json tokenizers tokens,\n"
    "offsets (characters) and special_tokens_mask; --decode adds decoded (the ids' text) and\n"
    "decoded_without_special. --max_length truncates (longest_first unless --truncation says),\n"
    "the special tokens included. --continue_on_error prints {\"error\": message} for a line that\n"
    "cannot be encoded and goes on (exit status 1 at the end) instead of stopping. --save_to\n"
    "writes the tokenizer's files into DIR (as save_pretrained) before reading stdin.\n"
    "--return_overflowing_tokens (with truncation, tokenizer.json tokenizers) adds overflowing:\n"
    "the windows truncation cut off, each an object of the same fields, in HF tokenizers' order;\n"
    "--stride N repeats N tokens of the window before in each.\n";

struct Args {
  std::string tokenizer_name, vocab, save_to;
  std::optional<bool> do_lower_case;
  ctrainer::EncodeOptions encode;
  std::optional<ctrainer::Truncation> truncation;
  bool jsonl = false, decode = false, continue_on_error = false;
};

bool parse_bool(const std::string& flag, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw ctrainer::ArgumentError("--" + flag + " expects true or false, got '" + value + "'");
}

int64_t parse_positive(const std::string& flag, const std::string& value) {
  size_t used = 0;
  int64_t n = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || n <= 0)
    throw ctrainer::ArgumentError("--" + flag + " expects a positive integer, got '" + value + "'");
  return n;
}

ctrainer::Side parse_side(const std::string& flag, const std::string& value) {
  if (value == "right") return ctrainer::Side::kRight;
  if (value == "left") return ctrainer::Side::kLeft;
  throw ctrainer::ArgumentError("--" + flag + " expects right or left, got '" + value + "'");
}

Args parse_args(int argc, char** argv) {
  Args args;
  static const char* const kFlags[] = {
      "tokenizer_name",     "vocab",        "do_lower_case",   "add_special_tokens",
      "max_length",         "truncation",   "truncation_side", "padding",
      "pad_to_multiple_of", "padding_side", "input_format",    "decode",
      "continue_on_error",  "save_to",      "stride",          "return_overflowing_tokens"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    const std::string name = arg.starts_with("--") ? arg.substr(2, arg.find('=') - 2) : "";
    bool known = false;
    for (const char* flag : kFlags) known = known || name == flag;
    if (!known)
      throw ctrainer::ArgumentError(
          (arg.starts_with("--") ? "unknown flag --" + name : "unexpected argument '" + arg + "'") +
          " (text comes on stdin; see --help for the flags)");
    if (name == "decode" || name == "continue_on_error" || name == "return_overflowing_tokens") {
      (name == "decode"              ? args.decode
       : name == "continue_on_error" ? args.continue_on_error
                                     : args.encode.return_overflowing_tokens) = true;
      continue;
    }
    std::string value;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw ctrainer::ArgumentError("--" + name + " needs a value");
    }
    if (name == "tokenizer_name") {
      args.tokenizer_name = value;
    } else if (name == "vocab") {
      args.vocab = value;
    } else if (name == "do_lower_case") {
      args.do_lower_case = parse_bool(name, value);
    } else if (name == "add_special_tokens") {
      args.encode.add_special_tokens = parse_bool(name, value);
    } else if (name == "max_length") {
      args.encode.max_length = parse_positive(name, value);
    } else if (name == "truncation") {
      static const std::map<std::string, ctrainer::Truncation> kinds = {
          {"longest_first", ctrainer::Truncation::kLongestFirst},
          {"only_first", ctrainer::Truncation::kOnlyFirst},
          {"only_second", ctrainer::Truncation::kOnlySecond}};
      const auto it = kinds.find(value);
      if (it == kinds.end())
        throw ctrainer::ArgumentError(
            "--truncation expects longest_first, only_first or "
            "only_second, got '" +
            value + "'");
      args.truncation = it->second;
    } else if (name == "truncation_side") {
      args.encode.truncation_side = parse_side(name, value);
    } else if (name == "padding") {
      if (value != "max_length")
        throw ctrainer::ArgumentError(
            "--padding expects max_length (each line is encoded alone), "
            "got '" +
            value + "'");
      args.encode.padding = ctrainer::Padding::kMaxLength;
    } else if (name == "pad_to_multiple_of") {
      args.encode.pad_to_multiple_of = parse_positive(name, value);
      if (args.encode.padding == ctrainer::Padding::kNone)
        args.encode.padding = ctrainer::Padding::kLongest;
    } else if (name == "padding_side") {
      args.encode.padding_side = parse_side(name, value);
    } else if (name == "stride") {
      args.encode.stride = value == "0" ? 0 : parse_positive(name, value);
    } else if (name == "save_to") {
      args.save_to = value;
    } else if (name == "input_format") {
      if (value != "tsv" && value != "jsonl")
        throw ctrainer::ArgumentError("--input_format expects tsv or jsonl, got '" + value + "'");
      args.jsonl = value == "jsonl";
    }
  }
  if (args.tokenizer_name.empty() == args.vocab.empty())
    throw ctrainer::ArgumentError(
        "give one of --tokenizer_name PATH (a folder or tokenizer.json) "
        "or --vocab FILE (a WordPiece vocab.txt)");
  if (args.do_lower_case && args.vocab.empty())
    throw ctrainer::ArgumentError(
        "--do_lower_case applies to --vocab; a --tokenizer_name "
        "folder's own files decide the casing");
  if (args.truncation) {
    if (!args.encode.max_length) throw ctrainer::ArgumentError("--truncation needs --max_length N");
    args.encode.truncation = *args.truncation;
  } else if (args.encode.max_length) {
    args.encode.truncation = ctrainer::Truncation::kLongestFirst;
  }
  if (args.encode.padding == ctrainer::Padding::kMaxLength && !args.encode.max_length)
    throw ctrainer::ArgumentError("--padding max_length needs --max_length N");
  if (args.encode.return_overflowing_tokens && !args.encode.max_length)
    throw ctrainer::ArgumentError(
        "--return_overflowing_tokens needs --max_length N (the windows are what truncation cuts)");
  if (args.encode.stride > 0 && !args.encode.return_overflowing_tokens)
    throw ctrainer::ArgumentError(
        "--stride sets the overlap of the overflowing windows: add --return_overflowing_tokens");
  return args;
}

std::shared_ptr<const ctrainer::Tokenizer> load(const Args& args) {
  if (!args.vocab.empty()) {
    ctrainer::BertTokenizerOptions options;
    options.do_lower_case = args.do_lower_case.value_or(true);
    return std::make_shared<ctrainer::BertTokenizer>(
        ctrainer::BertTokenizer::from_vocab_file(args.vocab, options));
  }
  return ctrainer::AutoTokenizer::from_pretrained(args.tokenizer_name);
}

/// The text (and pair) of one input line.
std::pair<std::string, std::optional<std::string>> read_line(const std::string& line, bool jsonl) {
  if (!jsonl) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) return {line, std::nullopt};
    if (line.find('\t', tab + 1) != std::string::npos)
      throw ctrainer::ArgumentError("expected one text or two tab-separated texts, got " +
                                    std::to_string(std::count(line.begin(), line.end(), '\t') + 1) +
                                    " columns (use --input_format jsonl for texts with tabs)");
    return {line.substr(0, tab), line.substr(tab + 1)};
  }
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e400
    throw ctrainer::ArgumentError(std::string("not a JSON line: ") + e.what());
  }
  if (!j.is_array() || j.empty() || j.size() > 2 || !j[0].is_string() ||
      (j.size() == 2 && !j[1].is_string()))
    throw ctrainer::ArgumentError("expected [\"text\"] or [\"text\", \"pair\"], got " +
                                  j.dump().substr(0, 80));
  if (j.size() == 1) return {j[0].get<std::string>(), std::nullopt};
  return {j[0].get<std::string>(), j[1].get<std::string>()};
}

/// Appends `value` as JSON on one line with ", " between items (invalid UTF-8 in a string shown
/// as U+FFFD). Typed, without building a json value: the parity tests print about 100,000
/// encodings, and the generic path spent most of the program's time allocating.
void append_json(std::string& out, int64_t value) {
  out += std::to_string(value);
}

void append_json(std::string& out, const std::string& value) {
  // Printable ASCII other than '"' and '\\' is printed as is, as nlohmann's dump would.
  if (std::all_of(value.begin(), value.end(),
                  [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; })) {
    out += '"';
    out += value;
    out += '"';
    return;
  }
  out += json(value).dump(-1, ' ', false, json::error_handler_t::replace);
}

void append_json(std::string& out, const std::pair<int64_t, int64_t>& value) {
  out += '[';
  append_json(out, value.first);
  out += ", ";
  append_json(out, value.second);
  out += ']';
}

template <typename T>
void append_json(std::string& out, const std::vector<T>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    append_json(out, values[i]);
  }
  out += ']';
}

/// One encoding as a JSON object with keys in a fixed order, ", " and ": " between items (the
/// layout of earlier versions); its overflowing windows nested the same way.
void append_encoding(std::string& out, const ctrainer::Encoding& enc, bool with_overflowing) {
  const size_t start = out.size();
  out += '{';
  const auto field = [&](const char* key, const auto& value) {
    if (out.size() > start + 1) out += ", ";
    out += '"';
    out += key;
    out += "\": ";
    append_json(out, value);
  };
  field("input_ids", enc.input_ids);
  field("token_type_ids", enc.token_type_ids);
  field("attention_mask", enc.attention_mask);
  if (enc.tokens.size() == enc.input_ids.size()) {  // tokenizers that track them
    field("tokens", enc.tokens);
    field("offsets", enc.offsets);
    field("special_tokens_mask", enc.special_tokens_mask);
  }
  if (with_overflowing) {
    if (out.size() > start + 1) out += ", ";
    out += "\"overflowing\": [";
    for (size_t i = 0; i < enc.overflowing.size(); ++i) {
      if (i) out += ", ";
      append_encoding(out, enc.overflowing[i], true);
    }
    out += ']';
  }
  out += '}';
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const ctrainer::ArgumentError& e) {
    std::fprintf(stderr, "ctrainer-tokenize: error: %s\n%s", e.what(), kUsage);
    return 2;
  }
  size_t line_number = 0;
  try {
    const auto tokenizer = load(args);
    if (!args.save_to.empty()) tokenizer->save_pretrained(args.save_to);
    std::string line;
    std::string shown;  // one output line, its buffer reused
    bool failed = false;
    while (std::getline(std::cin, line)) {
      ++line_number;
      ctrainer::Encoding enc;
      try {
        const auto [text, pair] = read_line(line, args.jsonl);
        enc = pair ? tokenizer->encode(text, std::string_view(*pair), args.encode)
                   : tokenizer->encode(text, std::nullopt, args.encode);
      } catch (const ctrainer::ArgumentError& e) {
        if (!args.continue_on_error) throw;
        failed = true;
        std::string error_line = "{\"error\": ";
        append_json(error_line, std::string(e.what()));
        error_line += "}\n";
        std::fwrite(error_line.data(), 1, error_line.size(), stdout);
        continue;
      }
      shown.clear();
      append_encoding(shown, enc, args.encode.return_overflowing_tokens);
      if (args.decode) {
        shown.pop_back();
        shown += ", \"decoded\": ";
        append_json(shown, tokenizer->decode(enc.input_ids, false, false));
        shown += ", \"decoded_without_special\": ";
        append_json(shown, tokenizer->decode(enc.input_ids, true, false));
        shown += '}';
      }
      shown += '\n';
      std::fwrite(shown.data(), 1, shown.size(), stdout);
    }
    if (failed) return 1;
  } catch (const ctrainer::ArgumentError& e) {
    std::fflush(stdout);
    // Errors before the first line concern the tokenizer files, which the message names.
    if (line_number > 0)
      std::fprintf(stderr, "ctrainer-tokenize: error: stdin line %zu: %s\n", line_number, e.what());
    else
      std::fprintf(stderr, "ctrainer-tokenize: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
