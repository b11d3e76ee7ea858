#pragma once
/// \file Command-line and JSON parsing of TrainingArguments plus application flags, in the style
/// of Hugging Face's HfArgumentParser:
///
///   prog --learning_rate 3e-5 --fp16 --report_to none
///   prog --config args.json --seed 7        (the command line overrides the file)
///   prog args.json                          (a single positional .json argument is the config)
///
/// Every flag comes from one registry of OptionSpec entries; --help, JSON loading, command-line
/// parsing and to_json(TrainingArguments) all read it, so they cannot drift apart.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>
#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {

/// The value type of a flag.
enum class OptionKind {
  kBool,        ///< `--flag`, `--flag true|false|yes|no|1|0|t|f|y|n` (case-insensitive)
  kInt64,       ///< a base-10 integer
  kDouble,      ///< a finite floating-point number
  kString,      ///< any text
  kEnum,        ///< one of OptionSpec::choices (an enum of args/choices.h)
  kStringList,  ///< one or more values: `--flag a b c`; a JSON array (or a single string)
  kJsonObject,  ///< a JSON object: its text on the command line, an object in JSON
};

/// One flag of the registry. Setters throw ArgumentError with a message about the value only; the
/// parser prefixes it with where the value came from (flag or file and key). The errors of enum
/// flags (ChoiceError, NotSupportedYet) name the flag already and keep their message.
struct OptionSpec {
  /// Canonical (Hugging Face) name: the flag is `--<name>`, the JSON key is `<name>`.
  std::string name;
  /// Deprecated or alternative names accepted on the command line and as JSON keys.
  std::vector<std::string> aliases;
  std::string help;
  OptionKind kind = OptionKind::kString;
  /// The target is a std::optional: JSON null or the value "None"/"none" resets it to unset.
  bool optional = false;
  /// kEnum: the values accepted now, in the order shown by --help (from the enum's ChoiceTable).
  std::vector<std::string> choices;
  /// The default as shown by --help ("None" for an unset optional).
  std::string default_text;
  /// Heading under which --help lists the flag.
  std::string group;
  /// Where the flag comes from, for docs/arguments.md: "transformers" (a field of transformers
  /// 5's TrainingArguments), "transformers 4" (a 4.x field that 5 removed, kept for its
  /// scripts) or "ctrainer" (ours). tests/parity/arguments_vs_hf.py checks it against transformers.
  std::string origin = "transformers";
  /// Values transformers accepts that ctrainer refuses with "not supported yet" (kEnum: the
  /// ChoiceTable's kLater; report_to: the integrations not built).
  std::vector<std::string> not_yet;
  /// Sets the value from command-line tokens (exactly one, except for kStringList).
  std::function<void(TrainingArguments&, const std::vector<std::string>&)> set_from_tokens;
  /// Sets the value from a JSON value (null resets an optional).
  std::function<void(TrainingArguments&, const nlohmann::json&)> set_from_json;
  /// The current value as JSON (null for an unset optional).
  std::function<nlohmann::json(const TrainingArguments&)> get_json;
};

/// The registry of TrainingArguments flags, in declaration order.
const std::vector<OptionSpec>& training_args_options();

/// The TrainingArguments flag called `name` (canonical name, not an alias); nullptr if none.
const OptionSpec* find_training_args_option(const std::string& name);

/// A field of transformers' TrainingArguments that ctrainer does not accept, and why. The parser
/// names the reason when such a flag or JSON key is given.
struct UnimplementedHfFlag {
  std::string name;
  std::string reason;
};
/// Every transformers 5 TrainingArguments field ctrainer lacks (tests/parity/arguments_vs_hf.py
/// checks the list against transformers: together with the registry it covers every field).
const std::vector<UnimplementedHfFlag>& unimplemented_hf_flags();

/// docs/arguments.md: every flag of the registry by group (type, default, origin, what is not
/// supported yet, help), then the transformers flags ctrainer does not accept. Printed by
/// `--help_markdown`; ctest docs.arguments_reference fails when the committed file differs.
std::string training_args_markdown();

/// Parses TrainingArguments and application flags from the command line and JSON config files.
/// Nothing is written to disk.
class ArgumentParser {
 public:
  /// `program_description` heads the --help text.
  explicit ArgumentParser(std::string program_description);

  /// Adds an application flag `--<name>` bound to `*target`, shown in --help after the
  /// TrainingArguments flags and accepted as a key of a JSON config file. The current value of
  /// `*target` is the default. `target` must outlive parse(). Names use [a-z0-9_] and must not
  /// clash with another flag; violations throw std::invalid_argument (a programming error).
  void add_option(const std::string& name, int64_t* target, const std::string& help);
  void add_option(const std::string& name, double* target, const std::string& help);
  void add_option(const std::string& name, std::string* target, const std::string& help);
  void add_option(const std::string& name, bool* target, const std::string& help);
  void add_option(const std::string& name, std::vector<std::string>* target,
                  const std::string& help);
  /// An optional integer: unset by default (shown as None), reset by `None` or JSON null.
  void add_option(const std::string& name, std::optional<int64_t>* target, const std::string& help);
  /// An optional text: unset by default (shown as None), reset by `None` or JSON null.
  void add_option(const std::string& name, std::optional<std::string>* target,
                  const std::string& help);
  /// The --help heading of the application flags added from now on (default "application"),
  /// e.g. "Seq2SeqTrainingArguments" for the flags add_seq2seq_options adds.
  void set_option_group(std::string heading) { option_group_ = std::move(heading); }

  /// Parses argv (argv[0] is the program) into `args`, starting from its current values: on
  /// SageMaker its values first (sagemaker_flag_values: SM_MODEL_DIR as --output_dir, the
  /// hyperparameters of SM_HPS or SM_HP_*; a flag also given on the command line keeps the
  /// command line's value), then JSON config files (`--config FILE` or one positional
  /// `FILE.json`, in command-line order), then the command-line flags in order (the last
  /// occurrence wins), then what `accelerate launch` exports (read_accelerate_environment:
  /// ACCELERATE_MIXED_PRECISION when neither fp16 nor bf16 is on, ACCELERATE_USE_CPU as
  /// use_cpu, as HF's TrainingArguments reads them), then args.validate(). On --help/-h prints
  /// help() to stdout and returns false without touching `args`. Throws ArgumentError (or
  /// NotSupportedYet); `args` is then unchanged, but application targets may already hold parsed
  /// values.
  bool parse(int argc, const char* const argv[], TrainingArguments& args);

  /// Every flag with its type, default and help text: TrainingArguments flags by topic, then
  /// the application's flags.
  std::string help() const;

  /// The environment parse() reads SageMaker's and accelerate's values from instead of this
  /// process's (tests).
  void set_environment(EnvironmentMap environment) { environment_ = std::move(environment); }

 private:
  const OptionSpec* find(const std::string& name) const;
  void add_app_option(OptionSpec spec);
  class PendingErrors;
  void apply_json_file(const std::string& path, TrainingArguments& args,
                       PendingErrors& pending) const;
  void apply_environment(const std::vector<std::string>& given, TrainingArguments& args,
                         PendingErrors& pending, const EnvironmentMap& environment) const;

  std::string description_;
  std::string program_ = "program";
  std::vector<OptionSpec> app_options_;
  std::string option_group_ = "application";
  std::optional<EnvironmentMap> environment_;
};

/// For main(): parses and validates. On --help prints the help to stdout and exits with 0; on
/// ArgumentError prints "error: <message>" to stderr (and to torchrun's error file, see
/// record_error_for_launcher) and exits with 2.
TrainingArguments parse_args_or_exit(ArgumentParser& parser, int argc, char** argv);

/// For main(): runs `body` and returns its exit code; an ArgumentError (bad input) is printed as
/// "error: <message>" to stderr and gives 2, any other exception gives 1, as the examples
/// document. Under torchrun the message also goes to its error file (record_error_for_launcher),
/// so torchrun's failure summary names it.
int run_reporting_errors(const std::function<int()>& body);

}  // namespace ctrainer
