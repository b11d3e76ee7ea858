// ctrainer-tokenize: prints the BERT encoding of each stdin line as one JSON object, to debug
// tokenization. One column = a text, two tab-separated columns = a pair.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>

namespace {

constexpr const char* kUsage =
    "usage: ctrainer-tokenize --vocab FILE [--do_lower_case true|false] [--max_length N]\n"
    "\n"
    "Reads lines from stdin: one column = a text, two tab-separated columns = a pair. Prints\n"
    "one JSON object per line with input_ids, token_type_ids and attention_mask (no padding).\n"
    "--max_length truncates longest_first, the special tokens included.\n"
    "Use --do_lower_case false with cased vocabularies (bert-base-cased).\n";

struct Args {
  std::string vocab;
  bool do_lower_case = true;
  std::optional<int64_t> max_length;
};

bool parse_bool(const std::string& flag, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw ctrainer::ArgumentError("--" + flag + " expects true or false, got '" + value + "'");
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    // Known flags first, so that an unknown one or a stray word is named as such (not as a flag
    // missing its value).
    const std::string name = arg.substr(0, arg.find('='));
    if (name != "--vocab" && name != "--do_lower_case" && name != "--max_length")
      throw ctrainer::ArgumentError(
          (arg.starts_with("--") ? "unknown flag " + name : "unexpected argument '" + arg + "'") +
          "; the flags are --vocab FILE, --do_lower_case true|false and --max_length N (text "
          "comes on stdin)");
    std::string value;
    if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw ctrainer::ArgumentError(arg + " needs a value");
    }
    if (arg == "--vocab") {
      args.vocab = value;
    } else if (arg == "--do_lower_case") {
      args.do_lower_case = parse_bool("do_lower_case", value);
    } else if (arg == "--max_length") {
      size_t used = 0;
      int64_t n = 0;
      try {
        n = std::stoll(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size() || n <= 0)
        throw ctrainer::ArgumentError("--max_length expects a positive integer, got '" + value +
                                      "'");
      args.max_length = n;
    } else {
      throw ctrainer::ArgumentError("unknown flag " + arg);
    }
  }
  if (args.vocab.empty()) throw ctrainer::ArgumentError("--vocab FILE is required");
  return args;
}

void append_ids(fmt::memory_buffer& out, std::string_view key, const std::vector<int64_t>& values) {
  fmt::format_to(std::back_inserter(out), "\"{}\": [{}]", key, fmt::join(values, ", "));
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
    ctrainer::BertTokenizerOptions options;
    options.do_lower_case = args.do_lower_case;
    const auto tokenizer = ctrainer::BertTokenizer::from_vocab_file(args.vocab, options);
    ctrainer::EncodeOptions encode_options;
    if (args.max_length) {
      encode_options.max_length = args.max_length;
      encode_options.truncation = ctrainer::Truncation::kLongestFirst;
    }

    std::string line;
    fmt::memory_buffer out;
    while (std::getline(std::cin, line)) {
      ++line_number;
      std::string_view text = line;
      std::optional<std::string_view> pair;
      if (auto tab = text.find('\t'); tab != std::string_view::npos) {
        pair = text.substr(tab + 1);
        text = text.substr(0, tab);
        if (pair->find('\t') != std::string_view::npos)
          throw ctrainer::ArgumentError(
              "expected one text or two tab-separated texts, got " +
              std::to_string(std::count(line.begin(), line.end(), '\t') + 1) + " columns");
      }
      const ctrainer::Encoding enc = tokenizer.encode(text, pair, encode_options);
      out.clear();
      out.push_back('{');
      append_ids(out, "input_ids", enc.input_ids);
      out.append(std::string_view(", "));
      append_ids(out, "token_type_ids", enc.token_type_ids);
      out.append(std::string_view(", "));
      append_ids(out, "attention_mask", enc.attention_mask);
      out.append(std::string_view("}\n"));
      std::fwrite(out.data(), 1, out.size(), stdout);
    }
  } catch (const ctrainer::ArgumentError& e) {
    std::fflush(stdout);
    // Errors before the first line concern the vocabulary file, which the message names.
    if (line_number > 0)
      std::fprintf(stderr, "ctrainer-tokenize: error: stdin line %zu: %s\n", line_number, e.what());
    else
      std::fprintf(stderr, "ctrainer-tokenize: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
