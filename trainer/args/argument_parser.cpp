#include <ctrainer/trainer/args/argument_parser.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/fsdp_config.h>
#include <ctrainer/distributed/launcher_error_file.h>
#include <ctrainer/integrations/accelerate/accelerate_deepspeed_plugin.h>
#include <ctrainer/integrations/accelerate/accelerate_environment.h>
#include <ctrainer/models/tokenizers/unicode.h>
#include <ctrainer/trainer/args/choices.h>
#include <ctrainer/trainer/args/option_codec.h>

namespace ctrainer {
namespace {

using nlohmann::json;
using namespace args_detail;

// ---- suggestions -------------------------------------------------------------------------------

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// The candidate closest to `name`, if close enough to be a plausible typo or abbreviation.
std::optional<std::string> closest(const std::string& name,
                                   const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  if (best) return best;
  // Prefix guessing is disabled, so an abbreviation gets the full name as a hint instead.
  if (name.size() >= 3) {
    for (const std::string& candidate : candidates) {
      if (candidate.rfind(name, 0) == 0) return candidate;
    }
  }
  return std::nullopt;
}

bool is_valid_option_name(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '_';
  });
}

/// Flags the parser itself handles.
const std::vector<std::string> kReservedNames = {"config", "help"};
}  // namespace

// ---- ArgumentParser ----------------------------------------------------------------------------

ArgumentParser::ArgumentParser(std::string program_description)
    : description_(std::move(program_description)) {}

void ArgumentParser::add_app_option(OptionSpec spec) {
  if (!is_valid_option_name(spec.name)) {
    throw std::invalid_argument("ArgumentParser::add_option: invalid flag name '" + spec.name +
                                "' (use lower-case letters, digits and _)");
  }
  const bool reserved =
      std::find(kReservedNames.begin(), kReservedNames.end(), spec.name) != kReservedNames.end();
  if (reserved || find(spec.name) != nullptr) {
    throw std::invalid_argument("ArgumentParser::add_option: flag --" + spec.name +
                                " already exists");
  }
  spec.group = option_group_;
  spec.default_text = display(spec.get_json(TrainingArguments{}));
  app_options_.push_back(std::move(spec));
}

void ArgumentParser::add_option(const std::string& name, int64_t* target, const std::string& help) {
  add_app_option(make_spec<int64_t>(name, help, PointerAccess<int64_t>{target}));
}
void ArgumentParser::add_option(const std::string& name, double* target, const std::string& help) {
  add_app_option(make_spec<double>(name, help, PointerAccess<double>{target}));
}
void ArgumentParser::add_option(const std::string& name, std::string* target,
                                const std::string& help) {
  add_app_option(make_spec<std::string>(name, help, PointerAccess<std::string>{target}));
}
void ArgumentParser::add_option(const std::string& name, bool* target, const std::string& help) {
  add_app_option(make_spec<bool>(name, help, PointerAccess<bool>{target}));
}
void ArgumentParser::add_option(const std::string& name, std::vector<std::string>* target,
                                const std::string& help) {
  add_app_option(make_spec<std::vector<std::string>>(
      name, help, PointerAccess<std::vector<std::string>>{target}));
}

void ArgumentParser::add_option(const std::string& name, std::optional<int64_t>* target,
                                const std::string& help) {
  add_app_option(
      make_spec<std::optional<int64_t>>(name, help, PointerAccess<std::optional<int64_t>>{target}));
}

void ArgumentParser::add_option(const std::string& name, std::optional<std::string>* target,
                                const std::string& help) {
  add_app_option(make_spec<std::optional<std::string>>(
      name, help, PointerAccess<std::optional<std::string>>{target}));
}

/// Looks up a flag by canonical name or alias.
const OptionSpec* ArgumentParser::find(const std::string& name) const {
  for (const OptionSpec& spec : training_args_options()) {
    if (spec.name == name) return &spec;
    if (std::find(spec.aliases.begin(), spec.aliases.end(), name) != spec.aliases.end()) {
      return &spec;
    }
  }
  for (const OptionSpec& spec : app_options_) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

namespace {

std::vector<std::string> all_flag_names(const std::vector<OptionSpec>& app_options) {
  std::vector<std::string> names = kReservedNames;
  for (const auto* list : {&training_args_options(), &app_options}) {
    for (const OptionSpec& spec : *list) {
      names.push_back(spec.name);
      names.insert(names.end(), spec.aliases.begin(), spec.aliases.end());
    }
  }
  return names;
}

/// The reason a transformers flag is missing (unimplemented_hf_flags), if `name` is one.
std::optional<std::string> unimplemented_reason(const std::string& name) {
  for (const UnimplementedHfFlag& flag : unimplemented_hf_flags())
    if (flag.name == name) return flag.reason;
  return std::nullopt;
}

std::string unknown_flag_message(const std::string& flag, const std::vector<OptionSpec>& app) {
  std::string bare = flag.substr(
      flag.find_first_not_of('-') == std::string::npos ? flag.size() : flag.find_first_not_of('-'));
  if (const auto reason = unimplemented_reason(bare))
    return "--" + bare + " is a transformers flag ctrainer does not implement: " + *reason +
           " (docs/arguments.md)";
  std::string message = "unknown flag " + flag;
  if (const auto hint = closest(bare, all_flag_names(app))) {
    message += "; did you mean --" + *hint + "?";
  } else {
    message += " (run with --help to list the flags)";
  }
  return message;
}

/// Throws unless `value` is UTF-8: the arguments end up in training_args.json (JSON is UTF-8),
/// and a message that quoted the bytes would itself be invalid. `where` names the value.
void require_utf8(const std::string& value, const std::string& where) {
  if (const std::optional<size_t> bad = unicode::first_invalid_utf8(value))
    throw ArgumentError(where + " is not valid UTF-8 (byte " + std::to_string(*bad) +
                        "): flags and their values must be UTF-8 text, as training_args.json is "
                        "JSON");
}

/// A flag of the command line with the values it took, in command-line order.
using BoundFlag = std::pair<const OptionSpec*, std::vector<std::string>>;

/// The command line, bound: the JSON config files (`--config FILE` and the one positional
/// FILE.json, in order) and every flag occurrence with its values.
struct CommandLine {
  std::vector<std::string> config_files;
  std::vector<BoundFlag> flags;
};

/// Whether a token starts a flag rather than being a value: `--x` and `-x`, but not `-`, a
/// negative number (`--max_steps -1`) or anything after a lone `--`.
bool looks_like_flag(const std::string& token) {
  if (token.size() < 2 || token[0] != '-') return false;
  return token[1] == '-' ||
         !(std::isdigit(static_cast<unsigned char>(token[1])) || token[1] == '.');
}

std::string missing_value_message(const std::string& name, const std::string& placeholder) {
  return "--" + name + " needs a value: --" + name + " " + placeholder;
}

/// The one pass over argv: normalises each flag's name (aliases, `--foo-bar`, `--no_foo`), binds
/// the values that follow it (`--flag=value` or separate tokens: one, or one or more for lists;
/// a bare bool takes a following bool literal only) and collects the config files. Applying the
/// result is ArgumentParser::parse's job.
CommandLine bind_command_line(const std::vector<std::string>& raw,
                              const std::function<const OptionSpec*(const std::string&)>& find,
                              const std::vector<OptionSpec>& app_options) {
  CommandLine out;
  // Positional arguments are judged after the flags, so that a misspelt flag is named first.
  std::vector<std::pair<size_t, std::string>> positionals;  // (place in config_files, token)
  const auto positional = [&](const std::string& token) {
    positionals.emplace_back(out.config_files.size(), token);
  };
  std::string last_flag;  // the flag a value belongs to, for the message
  for (size_t i = 0; i < raw.size(); ++i) {
    require_utf8(raw[i], "argument " + std::to_string(i + 1) +
                             (last_flag.empty() ? std::string() : " (after " + last_flag + ")"));
    if (looks_like_flag(raw[i])) last_flag = raw[i].substr(0, raw[i].find('='));
  }
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::string& token = raw[i];
    if (token == "--") {
      for (size_t j = i + 1; j < raw.size(); ++j) positional(raw[j]);
      break;
    }
    if (!looks_like_flag(token)) {
      positional(token);
      continue;
    }
    if (token.rfind("--", 0) != 0) throw ArgumentError(unknown_flag_message(token, app_options));
    const size_t eq = token.find('=');
    std::string name = token.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const std::optional<std::string> value =
        eq == std::string::npos ? std::nullopt : std::optional<std::string>(token.substr(eq + 1));
    std::replace(name.begin(), name.end(), '-', '_');  // HF accepts --local-rank for local_rank
    // The value of a one-value flag: after '=', else the next token unless it is a flag.
    const auto single_value = [&](const std::string& flag, const std::string& placeholder) {
      if (value) return *value;
      if (i + 1 < raw.size() && !looks_like_flag(raw[i + 1]) && raw[i + 1] != "--") return raw[++i];
      throw ArgumentError(missing_value_message(flag, placeholder));
    };

    if (name == "config") {
      out.config_files.push_back(single_value("config", "FILE.json"));
      continue;
    }
    const OptionSpec* spec = find(name);
    bool negated = false;
    if (spec == nullptr && name.rfind("no_", 0) == 0) {
      // HfArgumentParser's complement flag for bools that default to true.
      const OptionSpec* positive = find(name.substr(3));
      if (positive != nullptr && positive->kind == OptionKind::kBool && !positive->optional &&
          positive->default_text == "true") {
        spec = positive;
        negated = true;
      }
    }
    if (spec == nullptr) throw ArgumentError(unknown_flag_message("--" + name, app_options));

    if (negated) {
      if (value) {
        throw ArgumentError("--" + name + " takes no value; use --" + spec->name +
                            " true|false instead");
      }
      out.flags.emplace_back(spec, std::vector<std::string>{"false"});
    } else if (spec->kind == OptionKind::kBool) {
      std::string bool_value = "true";
      if (value) {
        bool_value = *value;
      } else if (i + 1 < raw.size() && (parse_bool_literal(raw[i + 1]) ||
                                        (spec->optional && is_none_literal(raw[i + 1])))) {
        bool_value = raw[++i];
      } else if (i + 1 < raw.size() && raw[i + 1].rfind("-", 0) != 0 &&
                 !ends_with(raw[i + 1], ".json")) {
        // Not a flag and not the config file: a misspelt value (HF: "Truthy value expected").
        throw ArgumentError("--" + spec->name + " takes true or false (also yes/no, 1/0), or " +
                            "nothing for true; got '" + raw[i + 1] + "'");
      }
      out.flags.emplace_back(spec, std::vector<std::string>{bool_value});
    } else if (spec->kind == OptionKind::kStringList && !value) {
      std::vector<std::string> values;
      while (i + 1 < raw.size() && !looks_like_flag(raw[i + 1]) && raw[i + 1] != "--")
        values.push_back(raw[++i]);
      if (values.empty())
        throw ArgumentError(missing_value_message(spec->name, value_placeholder(*spec)));
      out.flags.emplace_back(spec, std::move(values));
    } else {
      out.flags.emplace_back(
          spec, std::vector<std::string>{single_value(spec->name, value_placeholder(*spec))});
    }
  }
  for (size_t k = 0; k < positionals.size(); ++k) {
    const std::string& token = positionals[k].second;
    if (k > 0 || !ends_with(token, ".json")) {
      throw ArgumentError("unexpected argument '" + token +
                          "': flags start with --, and the only positional argument allowed "
                          "is one .json config file");
    }
  }
  // The positional file keeps its place among the --config files (command-line order).
  if (!positionals.empty()) {
    out.config_files.insert(
        out.config_files.begin() + static_cast<std::ptrdiff_t>(positionals[0].first),
        positionals[0].second);
  }
  return out;
}

}  // namespace

/// Errors of enum values that a later setting of the same flag may still replace, as when the
/// command line overrides a config file: a value outside the set (ChoiceError) or one that
/// transformers knows and ctrainer has not built (NotSupportedYet). Before enums, such values
/// were stored as text and only validate() judged the final one; keeping their errors until then
/// keeps that behaviour and its order of messages.
class ArgumentParser::PendingErrors {
 public:
  /// Runs `set`, which sets `spec` from one value. A ChoiceError or NotSupportedYet is kept for
  /// `spec`; success forgets the one kept before; any other ArgumentError is thrown with `where`
  /// (the flag, or the file and key) in front.
  void set(const OptionSpec& spec, const std::string& where, const std::function<void()>& set) {
    try {
      set();
      forget(spec);
    } catch (const ChoiceError&) {
      keep(spec, std::current_exception(), /*typo=*/true);
    } catch (const NotSupportedYet&) {
      keep(spec, std::current_exception(), /*typo=*/false);
    } catch (const ArgumentError& e) {
      throw ArgumentError(where + e.what());
    }
  }

  /// Throws the first kept error of the kind: typos before validate(), as its first check did,
  /// and values not supported yet after it, so that a bad value of another flag gets its own
  /// message first.
  void throw_first(bool typo) const {
    for (const Pending& pending : errors_) {
      if (pending.typo == typo) std::rethrow_exception(pending.error);
    }
  }

 private:
  struct Pending {
    const OptionSpec* spec;
    std::exception_ptr error;
    bool typo;
  };

  void forget(const OptionSpec& spec) {
    std::erase_if(errors_, [&](const Pending& p) { return p.spec == &spec; });
  }
  void keep(const OptionSpec& spec, std::exception_ptr error, bool typo) {
    forget(spec);
    errors_.push_back({&spec, std::move(error), typo});
  }

  std::vector<Pending> errors_;
};

void ArgumentParser::apply_json_file(const std::string& path, TrainingArguments& args,
                                     PendingErrors& pending) const {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ArgumentError("cannot read config file '" + path + "': no such file");
  }
  std::ifstream in(path);
  if (!in) throw ArgumentError("cannot read config file '" + path + "'");
  json config;
  try {
    config = json::parse(in);
  } catch (const json::exception& e) {
    throw ArgumentError("config file '" + path + "' is not valid JSON: " + e.what());
  }
  if (!config.is_object()) {
    throw ArgumentError("config file '" + path +
                        "' must hold a JSON object mapping flag names to values, not a " +
                        config.type_name());
  }
  std::map<std::string, std::string> seen;  // canonical name -> key that set it
  for (const auto& [key, value] : config.items()) {
    const OptionSpec* spec = find(key);
    if (spec == nullptr) {
      if (const auto reason = unimplemented_reason(key))
        throw ArgumentError("config file '" + path + "': \"" + key +
                            "\" is a transformers flag ctrainer does not implement: " + *reason +
                            " (docs/arguments.md)");
      std::string message = "config file '" + path + "': unknown key \"" + key + "\"";
      if (const auto hint = closest(key, all_flag_names(app_options_))) {
        message += "; did you mean \"" + *hint + "\"?";
      }
      throw ArgumentError(message);
    }
    if (const auto it = seen.find(spec->name); it != seen.end()) {
      throw ArgumentError("config file '" + path + "': keys \"" + it->second + "\" and \"" + key +
                          "\" both set " + spec->name + "; keep one");
    }
    seen.emplace(spec->name, key);
    // (value captured by name: clang before 16 cannot capture a structured binding.)
    pending.set(*spec, "config file '" + path + "', key \"" + key + "\": ", [&, &value = value] {
      spec->set_from_json(args, value);
    });
  }
}

void ArgumentParser::apply_environment(const std::vector<std::string>& given,
                                       TrainingArguments& args, PendingErrors& pending,
                                       const EnvironmentMap& environment) const {
  for (const EnvironmentFlagValue& value : sagemaker_flag_values(environment)) {
    const OptionSpec* spec = find(value.flag);
    if (spec == nullptr)
      throw ArgumentError(value.source + ": " +
                          unknown_flag_message("--" + value.flag, app_options_) +
                          "; remove it from the estimator's hyperparameters");
    if (std::find(given.begin(), given.end(), spec->name) != given.end()) continue;
    for (const std::string& token : value.tokens) require_utf8(token, value.source);
    if (spec->kind != OptionKind::kStringList && value.tokens.size() != 1)
      throw ArgumentError(value.source + ": --" + spec->name + " takes one value, not a list");
    pending.set(*spec, value.source + ": ", [&] { spec->set_from_tokens(args, value.tokens); });
  }
}

namespace {

/// accelerate launch's variables, after every other source, as HF's TrainingArguments reads them
/// in __post_init__ and _setup_devices: ACCELERATE_MIXED_PRECISION unless fp16 or bf16 is on
/// (`self.mixed_precision = env; if self.fp16: "fp16" elif self.bf16: "bf16"`), so a flag that
/// turns one on wins and `--bf16 false` does not turn the variable off; ACCELERATE_USE_CPU as
/// use_cpu (`self.use_cpu or env`); accelerate's FSDP plugin (ACCELERATE_USE_FSDP and FSDP_*)
/// as --fsdp with that fsdp_config when --fsdp is off; accelerate's DeepSpeed plugin
/// (ACCELERATE_USE_DEEPSPEED and ACCELERATE_DEEPSPEED_*) as --deepspeed with the plugin's config
/// when --deepspeed is not given.
void apply_accelerate_environment(const EnvironmentMap& environment, TrainingArguments& args) {
  const AccelerateLaunchEnvironment launch = read_accelerate_environment(environment);
  if (launch.mixed_precision && !args.fp16 && !args.bf16)
    (*launch.mixed_precision == "bf16" ? args.bf16 : args.fp16) = true;
  if (launch.use_cpu) args.use_cpu = true;
  // HF's Trainer hands accelerate its own FSDP plugin when --fsdp is on; otherwise accelerate
  // builds one from the FSDP_* variables.
  if (launch.fsdp_config && !fsdp_enabled(args.fsdp)) {
    if (args.deepspeed)
      throw ArgumentError(
          "ACCELERATE_USE_FSDP=true (accelerate launch's FSDP) with --deepspeed: choose one, "
          "the accelerate config's FSDP or the DeepSpeed file");
    if (args.fsdp_config)
      throw ArgumentError(
          "--fsdp_config without --fsdp under accelerate launch's FSDP (ACCELERATE_USE_FSDP=true): "
          "give --fsdp too (then the flags decide) or drop --fsdp_config (then the accelerate "
          "config's fsdp_config does)");
    args.fsdp = "true";
    args.fsdp_config = launch.fsdp_config->dump();
  }
  // HF's TrainingArguments builds accelerate's DeepSpeed plugin from the variables only when
  // --deepspeed is not given (the flag's file wins), with its own mixed precision.
  if (launch.deepspeed_config && !args.deepspeed) {
    if (fsdp_enabled(args.fsdp))
      throw ArgumentError("--fsdp " + args.fsdp +
                          " under accelerate launch's DeepSpeed (ACCELERATE_USE_DEEPSPEED=true): "
                          "choose one, drop --fsdp or use an accelerate config without DeepSpeed");
    nlohmann::json config = *launch.deepspeed_config;
    apply_deepspeed_mixed_precision(config, args.fp16 ? "fp16" : args.bf16 ? "bf16" : "no");
    args.deepspeed = config.dump();
    args.deepspeed_origin =
        "(the DeepSpeed config of accelerate launch's plugin, "
        "ACCELERATE_USE_DEEPSPEED)";
  }
}

}  // namespace

bool ArgumentParser::parse(int argc, const char* const argv[], TrainingArguments& args) {
  if (argc > 0 && argv != nullptr && argv[0] != nullptr) {
    program_ = std::filesystem::path(argv[0]).filename().string();
  }
  const std::vector<std::string> raw =
      argc > 1 ? std::vector<std::string>(argv + 1, argv + argc) : std::vector<std::string>{};

  // --help wins over everything else, as with argparse.
  for (const std::string& token : raw) {
    if (token == "--") break;
    if (token == "-h" || token == "--help") {
      std::cout << help() << std::flush;
      return false;
    }
    if (token == "--help_markdown") {
      std::cout << training_args_markdown() << std::flush;
      return false;
    }
  }

  const CommandLine command_line = bind_command_line(
      raw, [this](const std::string& name) { return find(name); }, app_options_);
  const std::vector<std::string>& config_files = command_line.config_files;
  const std::vector<BoundFlag>& flags = command_line.flags;

  TrainingArguments result = args;
  PendingErrors pending;
  std::vector<std::string> given;  // flags on the command line: the environment's are ignored
  for (const auto& flag : flags) given.push_back(flag.first->name);
  const EnvironmentMap environment = environment_ ? *environment_ : process_environment();
  apply_environment(given, result, pending, environment);
  for (const std::string& path : config_files) apply_json_file(path, result, pending);
  for (const auto& flag : flags) {
    const OptionSpec& spec = *flag.first;
    pending.set(spec, "--" + spec.name + ": ", [&] { spec.set_from_tokens(result, flag.second); });
  }
  pending.throw_first(/*typo=*/true);
  apply_accelerate_environment(environment, result);
  result.validate();
  pending.throw_first(/*typo=*/false);
  args = std::move(result);
  return true;
}

TrainingArguments parse_args_or_exit(ArgumentParser& parser, int argc, char** argv) {
  TrainingArguments args;
  try {
    if (!parser.parse(argc, argv, args)) {
      std::cout.flush();
      std::exit(0);
    }
  } catch (const ArgumentError& e) {
    std::cerr << "error: " << e.what() << std::endl;
    record_error_for_launcher(e.what());
    std::exit(2);
  }
  return args;
}

int run_reporting_errors(const std::function<int()>& body) {
  try {
    return body();
  } catch (const ArgumentError& e) {
    std::cerr << "error: " << e.what() << std::endl;
    record_error_for_launcher(e.what());
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    record_error_for_launcher(e.what());
    return 1;
  }
}

}  // namespace ctrainer
