#include <ctrainer/trainer/args/argument_parser.h>

#include <sstream>
#include <string>

#include <ctrainer/trainer/args/option_codec.h>

// ArgumentParser::help(): the --help text, laid out as argparse does (flags by group, wrapped).
namespace ctrainer {
namespace args_detail {
namespace {

constexpr size_t kHelpWidth = 100;
constexpr size_t kHelpIndent = 6;

// ---- --help layout -----------------------------------------------------------------------------

void append_wrapped(std::string& out, const std::string& text, size_t indent = kHelpIndent) {
  std::istringstream words(text);
  std::string word;
  std::string line(indent, ' ');
  bool line_empty = true;
  while (words >> word) {
    if (!line_empty && line.size() + 1 + word.size() > kHelpWidth) {
      out += line + '\n';
      line.assign(indent, ' ');
      line_empty = true;
    }
    if (!line_empty) line += ' ';
    line += word;
    line_empty = false;
  }
  if (!line_empty) out += line + '\n';
}

}  // namespace

std::string value_placeholder(const OptionSpec& spec) {
  switch (spec.kind) {
    case OptionKind::kBool:
      return "[BOOL]";
    case OptionKind::kInt64:
      return "INT";
    case OptionKind::kDouble:
      return "FLOAT";
    case OptionKind::kString:
      return "STR";
    case OptionKind::kEnum: {
      std::string out = "{";
      for (size_t i = 0; i < spec.choices.size(); ++i) out += (i ? "," : "") + spec.choices[i];
      return out + "}";
    }
    case OptionKind::kStringList:
      return "STR [STR ...]";
    case OptionKind::kJsonObject:
      return "JSON";
  }
  return "VALUE";
}

namespace {

void append_option_help(std::string& out, const OptionSpec& spec) {
  std::string text = spec.help;
  const std::string default_part = "  (default: " + spec.default_text + ")";
  std::string header = "  --" + spec.name + " " + value_placeholder(spec);
  if (spec.kind == OptionKind::kEnum && header.size() + default_part.size() > kHelpWidth) {
    // Too many choices for one line: list them in the wrapped text instead.
    header = "  --" + spec.name + " CHOICE";
    std::string listed;
    for (const std::string& choice : spec.choices) listed += (listed.empty() ? "" : ", ") + choice;
    text += " Choices: " + listed + ".";
  }
  if (header.size() + default_part.size() <= kHelpWidth) {
    header += default_part;
  } else {
    text += " Default: " + spec.default_text + ".";
  }
  out += header + "\n";
  for (const std::string& alias : spec.aliases) text += " Alias: --" + alias + ".";
  if (spec.kind == OptionKind::kBool && !spec.optional && spec.default_text == "true") {
    text += " Disable with --no_" + spec.name + ".";
  }
  if (spec.optional) text += " Pass None to unset.";
  append_wrapped(out, text);
}

}  // namespace
}  // namespace args_detail

using namespace args_detail;

std::string ArgumentParser::help() const {
  std::string out;
  if (!description_.empty()) out += description_ + "\n\n";
  out += "usage: " + program_ + " [FILE.json] [--config FILE.json] [--<flag> VALUE ...]\n\n";
  append_wrapped(out,
                 "Flags are Hugging Face TrainingArguments names. A JSON config file maps flag "
                 "names to values; flags on the command line override it. Booleans: --flag, "
                 "--flag true|false. Lists: --flag a b c.",
                 /*indent=*/0);
  out += "\ngeneral:\n";
  out += "  -h, --help\n";
  append_wrapped(out, "Show this help and exit.");
  out += "  --help_markdown\n";
  append_wrapped(out,
                 "Print the training arguments' reference (docs/arguments.md) as Markdown and "
                 "exit.");
  out += "  --config FILE.json\n";
  append_wrapped(out,
                 "Read flag values from a JSON object (as written to output_dir/"
                 "training_args.json). A single positional FILE.json does the same.");

  std::string group;
  for (const OptionSpec& spec : training_args_options()) {
    if (spec.group != group) {
      group = spec.group;
      out += "\ntraining arguments: " + group + ":\n";
    }
    append_option_help(out, spec);
  }
  group.clear();
  for (const OptionSpec& spec : app_options_) {
    if (spec.group != group) {
      group = spec.group;
      out += "\n" + group + ":\n";
    }
    append_option_help(out, spec);
  }
  return out;
}

}  // namespace ctrainer
