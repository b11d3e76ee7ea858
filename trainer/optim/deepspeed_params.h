#pragma once
/// \file Reading the "params" object of a DeepSpeed config section ("optimizer" or "scheduler")
/// with errors that name the JSON path (e.g. `scheduler.params.warmup_num_steps`). Shared by
/// deepspeed_optimizers.cpp and deepspeed_schedulers.cpp; not a public API.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer::deepspeed_detail {

/// A view of `params` (a JSON object, or null for "no params") belonging to `<section>` of type
/// `type`. Every accessor checks the value's JSON type and refuses "auto".
class DsParams {
 public:
  /// Throws ArgumentError unless `params` is an object or null, or when it holds a key outside
  /// `allowed` (the message lists the allowed keys).
  DsParams(const nlohmann::json& params, std::string section, std::string type,
           const std::vector<std::string>& allowed);

  bool has(const std::string& key) const;
  /// `<section>.params.<key>`, for error messages.
  std::string path(const std::string& key) const;

  /// A JSON number (integer or float).
  double number(const std::string& key, double fallback) const;
  /// A required JSON number.
  double required_number(const std::string& key) const;
  /// A JSON integer (a float such as 10.0 is refused, as DeepSpeed's isinstance(.., int) does).
  int64_t integer(const std::string& key, int64_t fallback) const;
  int64_t required_integer(const std::string& key) const;
  /// An integer or null (DeepSpeed's `None` defaults); nullopt when absent or null.
  std::optional<int64_t> optional_integer(const std::string& key) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string string(const std::string& key, const std::string& fallback) const;
  /// DeepSpeed's _format_param: a number is broadcast to every param group; a list must have one
  /// number per group. nullopt when the key is absent.
  std::optional<std::vector<double>> per_group(const std::string& key, size_t num_groups) const;
  /// A list of exactly `size` numbers (betas).
  std::vector<double> number_list(const std::string& key, size_t size,
                                  const std::vector<double>& fallback) const;

 private:
  // The value at `key`, after refusing "auto"; null when absent.
  const nlohmann::json& value(const std::string& key) const;
  [[noreturn]] void type_error(const std::string& key, const std::string& expected) const;

  const nlohmann::json& params_;
  std::string section_;
  std::string type_;
};

}  // namespace ctrainer::deepspeed_detail
