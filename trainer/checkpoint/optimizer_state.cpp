#include <ctrainer/trainer/checkpoint/optimizer_state.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <c10/core/ScalarType.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/optimizer_kind.h>

namespace ctrainer {
namespace {

using nlohmann::json;
using torch::optim::AdamOptions;
using torch::optim::AdamWOptions;
using torch::optim::Optimizer;
using torch::optim::OptimizerOptions;
using torch::optim::OptimizerParamState;
using torch::optim::SGDOptions;

constexpr const char* kLoad = "load_optimizer_state_dict: ";

// libtorch keys Optimizer::state() by the parameter's TensorImpl (the pointer as void* in 2.x;
// 1.13 printed it into a std::string). The key comes from the map's own key_type so that this
// file does not depend on that choice.
using StateMap =
    std::remove_cv_t<std::remove_reference_t<decltype(std::declval<const Optimizer&>().state())>>;
using StateKey = typename StateMap::key_type;

template <typename Key>
Key make_state_key(const at::Tensor& param) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream out;
    out << param.unsafeGetTensorImpl();
    return out.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}

StateKey state_key(const at::Tensor& param) {
  return make_state_key<StateKey>(param);
}

using Kind = OptimizerKind;

Kind detect_kind(const Optimizer& optimizer, const char* caller) {
  if (auto kind = optimizer_kind(optimizer)) return *kind;
  throw ArgumentError(std::string(caller) +
                      "unsupported optimizer type; supported: torch::optim::AdamW, Adam, SGD");
}

std::string tensor_name(size_t group, size_t index, const char* field) {
  return "state." + std::to_string(group) + "." + std::to_string(index) + "." + field;
}

std::string where_param(size_t group, size_t index) {
  return "param group " + std::to_string(group) + ", parameter " + std::to_string(index);
}

std::string shape_string(at::IntArrayRef shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// ---- save ------------------------------------------------------------------------------------

template <typename Options>
const Options& options_as(const OptimizerOptions& options, Kind kind, size_t group) {
  const auto* typed = dynamic_cast<const Options*>(&options);
  if (typed == nullptr) {
    throw ArgumentError("optimizer_state_dict: param group " + std::to_string(group) +
                        " does not have " + optimizer_kind_name(kind) + " options");
  }
  return *typed;
}

template <typename Options>
json adam_options_json(const Options& o) {
  return json{{"lr", o.lr()},
              {"betas", {std::get<0>(o.betas()), std::get<1>(o.betas())}},
              {"eps", o.eps()},
              {"weight_decay", o.weight_decay()},
              {"amsgrad", o.amsgrad()}};
}

json options_json(const OptimizerOptions& options, Kind kind, size_t group) {
  switch (kind) {
    case Kind::kAdamW:
      return adam_options_json(options_as<AdamWOptions>(options, kind, group));
    case Kind::kAdam:
      return adam_options_json(options_as<AdamOptions>(options, kind, group));
    case Kind::kSGD: {
      const auto& o = options_as<SGDOptions>(options, kind, group);
      return json{{"lr", o.lr()},
                  {"momentum", o.momentum()},
                  {"dampening", o.dampening()},
                  {"weight_decay", o.weight_decay()},
                  {"nesterov", o.nesterov()}};
    }
  }
  return json::object();
}

json param_state_json(const OptimizerParamState& base, Kind kind, OptimizerStateDict& out,
                      size_t group, size_t index) {
  // The state's dynamic type is fixed by the optimizer's class; check it anyway, since a
  // state of another kind would be read as garbage.
  const std::optional<ParamStateBuffers> state = param_state_buffers(base, kind);
  if (!state)
    throw ArgumentError("optimizer_state_dict: " + where_param(group, index) +
                        " has state that is not " + optimizer_kind_name(kind) + " state");
  json names = json::array();
  // In the order the format has always listed them.
  for (const char* field : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer"}) {
    auto it = state->buffers.find(field);
    if (it == state->buffers.end()) continue;
    out.tensors[tensor_name(group, index, field)] = it->second.detach();
    names.push_back(field);
  }
  json entry = {{"tensors", std::move(names)}};
  if (state->step) entry["step"] = *state->step;
  return entry;
}

// ---- load: typed access to the meta JSON -----------------------------------------------------

const json& member(const json& object, const char* key, const std::string& where) {
  if (!object.is_object()) throw ArgumentError(kLoad + where + " must be a JSON object");
  const auto it = object.find(key);
  if (it == object.end()) {
    throw ArgumentError(std::string(kLoad) + "missing key \"" + key + "\" in " + where);
  }
  return *it;
}

[[noreturn]] void ill_typed(const char* key, const std::string& where, const char* expected,
                            const json& value) {
  throw ArgumentError(std::string(kLoad) + "\"" + key + "\" in " + where + " must be " + expected +
                      ", got " + value.dump());
}

double get_double(const json& object, const char* key, const std::string& where) {
  const json& v = member(object, key, where);
  if (!v.is_number()) ill_typed(key, where, "a number", v);
  const double d = v.get<double>();
  if (!std::isfinite(d)) ill_typed(key, where, "finite", v);
  return d;
}

// A hyper-parameter that libtorch's constructors require to be >= 0.
double get_non_negative(const json& object, const char* key, const std::string& where) {
  const double d = get_double(object, key, where);
  if (d < 0.0) ill_typed(key, where, ">= 0", object.at(key));
  return d;
}

bool get_bool(const json& object, const char* key, const std::string& where) {
  const json& v = member(object, key, where);
  if (!v.is_boolean()) ill_typed(key, where, "true or false", v);
  return v.get<bool>();
}

int64_t get_int(const json& object, const char* key, const std::string& where) {
  const json& v = member(object, key, where);
  if (!v.is_number_integer()) ill_typed(key, where, "an integer", v);
  return v.get<int64_t>();
}

const json& get_array(const json& object, const char* key, const std::string& where) {
  const json& v = member(object, key, where);
  if (!v.is_array()) ill_typed(key, where, "an array", v);
  return v;
}

std::vector<int64_t> get_shape(const json& object, const std::string& where) {
  const json& v = get_array(object, "shape", where);
  std::vector<int64_t> shape;
  for (const auto& d : v) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      ill_typed("shape", where, "an array of non-negative integers", v);
    }
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

// ---- load: building the new options and states -----------------------------------------------

template <typename Options>
std::unique_ptr<OptimizerOptions> adam_options(const OptimizerOptions& current, const json& j,
                                               const std::string& where) {
  auto o = std::make_unique<Options>(static_cast<const Options&>(current));
  o->lr(get_non_negative(j, "lr", where));
  const json& betas = get_array(j, "betas", where);
  if (betas.size() != 2 || !betas[0].is_number() || !betas[1].is_number()) {
    ill_typed("betas", where, "two numbers", betas);
  }
  const double b1 = betas[0].get<double>();
  const double b2 = betas[1].get<double>();
  if (!(b1 >= 0.0 && b1 < 1.0 && b2 >= 0.0 && b2 < 1.0)) {
    ill_typed("betas", where, "two values in [0, 1)", betas);
  }
  o->betas(std::make_tuple(b1, b2));
  o->eps(get_non_negative(j, "eps", where));
  o->weight_decay(get_non_negative(j, "weight_decay", where));
  o->amsgrad(get_bool(j, "amsgrad", where));
  return o;
}

std::unique_ptr<OptimizerOptions> restored_options(Kind kind, const OptimizerOptions& current,
                                                   const json& j, const std::string& where) {
  // The target's own group options must already have the optimizer's type (always true for
  // groups added through the optimizer's constructor or add_param_group).
  if (optimizer_kind(current) != kind) {
    throw ArgumentError(std::string(kLoad) + "the optimizer's " + where + " does not have " +
                        optimizer_kind_name(kind) + " options");
  }
  switch (kind) {
    case Kind::kAdamW:
      return adam_options<AdamWOptions>(current, j, where);
    case Kind::kAdam:
      return adam_options<AdamOptions>(current, j, where);
    case Kind::kSGD: {
      auto o = std::make_unique<SGDOptions>(static_cast<const SGDOptions&>(current));
      o->lr(get_non_negative(j, "lr", where));
      o->momentum(get_non_negative(j, "momentum", where));
      o->dampening(get_double(j, "dampening", where));
      o->weight_decay(get_non_negative(j, "weight_decay", where));
      o->nesterov(get_bool(j, "nesterov", where));
      if (o->nesterov() && !(o->momentum() > 0.0 && o->dampening() == 0.0)) {
        throw ArgumentError(std::string(kLoad) + where +
                            ": nesterov requires momentum > 0 and dampening == 0");
      }
      return o;
    }
  }
  return nullptr;
}

// Reads the state tensors of one parameter: checks that exactly the listed names are present,
// with the parameter's shape, and copies them onto the parameter's device and dtype.
class TensorReader {
 public:
  TensorReader(const OptimizerStateDict& state, const at::Tensor& param, size_t group, size_t index,
               const json& names, const std::string& where)
      : state_(state), param_(param), group_(group), index_(index), where_(where) {
    for (const auto& n : names) {
      if (!n.is_string()) ill_typed("tensors", where, "an array of names", names);
      listed_.insert(n.get<std::string>());
    }
  }

  // The copied tensor, or an undefined one when the name is not listed and not required.
  at::Tensor read(const char* field, bool required, std::set<std::string>& consumed) {
    if (listed_.erase(field) == 0) {
      if (required) {
        throw ArgumentError(std::string(kLoad) + where_ + ": the saved state has no \"" + field +
                            "\"");
      }
      return {};
    }
    const std::string name = tensor_name(group_, index_, field);
    const auto it = state_.tensors.find(name);
    if (it == state_.tensors.end() || !it->second.defined()) {
      throw ArgumentError(std::string(kLoad) + "missing tensor \"" + name + "\" (" + where_ + ")");
    }
    const at::Tensor& t = it->second;
    if (!t.sizes().equals(param_.sizes())) {
      throw ArgumentError(std::string(kLoad) + "tensor \"" + name + "\" has shape " +
                          shape_string(t.sizes()) + " but " + where_ + " has shape " +
                          shape_string(param_.sizes()));
    }
    consumed.insert(name);
    // copy=true: the optimizer updates its buffers in place and must never write into the
    // caller's tensors (nor share storage with them).
    return t.detach().to(param_.device(), param_.scalar_type(), /*non_blocking=*/false,
                         /*copy=*/true);
  }

  // Names listed in the meta that this optimizer type does not know.
  void check_all_read() const {
    if (!listed_.empty()) {
      throw ArgumentError(std::string(kLoad) + where_ + ": unknown state tensor \"" +
                          *listed_.begin() + "\"");
    }
  }

 private:
  const OptimizerStateDict& state_;
  const at::Tensor& param_;
  size_t group_;
  size_t index_;
  std::string where_;
  std::set<std::string> listed_;
};

/// One parameter's saved state as `kind`'s state, every listed tensor read and checked.
std::unique_ptr<OptimizerParamState> read_param_state(Kind kind, const json& j,
                                                      TensorReader& reader, bool amsgrad,
                                                      std::set<std::string>& consumed,
                                                      const std::string& where) {
  ParamStateBuffers saved;
  if (kind == Kind::kSGD) {
    saved.buffers["momentum_buffer"] = reader.read("momentum_buffer", true, consumed);
  } else {
    const int64_t step = get_int(j, "step", where);
    // torch adds 1 at every step (and computes beta^step in double): a count near 2^63 from a
    // file would wrap to a negative step, which no later load accepts.
    if (step < 0 || step > (int64_t{1} << 53))
      ill_typed("step", where, "in [0, 2^53]", j.at("step"));
    saved.step = step;
    saved.buffers["exp_avg"] = reader.read("exp_avg", true, consumed);
    saved.buffers["exp_avg_sq"] = reader.read("exp_avg_sq", true, consumed);
    // With amsgrad the step reads max_exp_avg_sq unconditionally, so it must be there.
    if (at::Tensor max = reader.read("max_exp_avg_sq", amsgrad, consumed); max.defined())
      saved.buffers["max_exp_avg_sq"] = max;
  }
  reader.check_all_read();
  return make_param_state(kind, saved);
}

bool group_amsgrad(Kind kind, const OptimizerOptions& options) {
  if (kind == Kind::kAdamW) return static_cast<const AdamWOptions&>(options).amsgrad();
  if (kind == Kind::kAdam) return static_cast<const AdamOptions&>(options).amsgrad();
  return false;
}

}  // namespace

OptimizerStateDict optimizer_state_dict(const torch::optim::Optimizer& optimizer) {
  const Kind kind = detect_kind(optimizer, "optimizer_state_dict: ");
  OptimizerStateDict out;
  json groups = json::array();
  const auto& state = optimizer.state();
  const auto& param_groups = optimizer.param_groups();
  for (size_t g = 0; g < param_groups.size(); ++g) {
    const auto& group = param_groups[g];
    json params = json::array();
    for (size_t i = 0; i < group.params().size(); ++i) {
      const at::Tensor& p = group.params()[i];
      json entry{{"shape", p.sizes().vec()}, {"dtype", c10::toString(p.scalar_type())}};
      const auto it = state.find(state_key(p));
      entry["state"] = (it == state.end() || !it->second)
                           ? json(nullptr)
                           : param_state_json(*it->second, kind, out, g, i);
      params.push_back(std::move(entry));
    }
    groups.push_back(
        json{{"options", options_json(group.options(), kind, g)}, {"params", std::move(params)}});
  }
  out.meta = json{{"format_version", kOptimizerStateFormatVersion},
                  {"optimizer", optimizer_kind_name(kind)},
                  {"param_groups", std::move(groups)}};
  return out;
}

void load_optimizer_state_dict(torch::optim::Optimizer& optimizer,
                               const OptimizerStateDict& state) {
  const Kind kind = detect_kind(optimizer, kLoad);
  const json& meta = state.meta;
  const std::string top = "the optimizer state meta";

  const int64_t version = get_int(meta, "format_version", top);
  if (version != kOptimizerStateFormatVersion) {
    throw ArgumentError(std::string(kLoad) + "unsupported format_version " +
                        std::to_string(version) + " (this build reads " +
                        std::to_string(kOptimizerStateFormatVersion) + ")");
  }
  const json& type = member(meta, "optimizer", top);
  if (!type.is_string()) ill_typed("optimizer", top, "a string", type);
  if (type.get<std::string>() != optimizer_kind_name(kind)) {
    throw ArgumentError(std::string(kLoad) + "the state was saved from optimizer " +
                        type.get<std::string>() + " but is being loaded into " +
                        optimizer_kind_name(kind));
  }
  const json& saved_groups = get_array(meta, "param_groups", top);
  auto& groups = optimizer.param_groups();
  if (saved_groups.size() != groups.size()) {
    throw ArgumentError(std::string(kLoad) + "the state has " +
                        std::to_string(saved_groups.size()) +
                        " param groups but the optimizer has " + std::to_string(groups.size()));
  }

  // Everything is validated and built first, then committed, so a failed load leaves the
  // optimizer untouched.
  std::vector<std::unique_ptr<OptimizerOptions>> new_options;
  std::vector<std::vector<std::unique_ptr<OptimizerParamState>>> new_states;
  std::set<std::string> consumed;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string where_group = "param_groups[" + std::to_string(g) + "]";
    const json& saved = saved_groups[g];
    new_options.push_back(restored_options(kind, groups[g].options(),
                                           member(saved, "options", where_group),
                                           where_group + ".options"));
    const bool amsgrad = group_amsgrad(kind, *new_options.back());

    const json& saved_params = get_array(saved, "params", where_group);
    const auto& params = groups[g].params();
    if (saved_params.size() != params.size()) {
      throw ArgumentError(std::string(kLoad) + "param group " + std::to_string(g) + " has " +
                          std::to_string(params.size()) + " parameters but the state has " +
                          std::to_string(saved_params.size()));
    }
    auto& states = new_states.emplace_back();
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string where = where_param(g, i);
      const std::string where_json = where_group + ".params[" + std::to_string(i) + "]";
      const json& entry = saved_params[i];
      const std::vector<int64_t> shape = get_shape(entry, where_json);
      if (!params[i].sizes().equals(shape)) {
        throw ArgumentError(std::string(kLoad) + where + ": the optimizer's parameter has shape " +
                            shape_string(params[i].sizes()) + " but the saved state is for shape " +
                            shape_string(shape));
      }
      const json& saved_state = member(entry, "state", where_json);
      if (saved_state.is_null()) {
        states.emplace_back();  // never stepped: no state
        continue;
      }
      const std::string where_state = where_json + ".state";
      TensorReader reader(state, params[i], g, i, get_array(saved_state, "tensors", where_state),
                          where);
      states.push_back(read_param_state(kind, saved_state, reader, amsgrad, consumed, where_state));
    }
  }
  for (const auto& [name, tensor] : state.tensors) {
    if (consumed.count(name) == 0) {
      throw ArgumentError(std::string(kLoad) + "unexpected tensor \"" + name +
                          "\" (not listed in the meta; the state belongs to another optimizer "
                          "or was corrupted)");
    }
  }

  auto& live = optimizer.state();
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].set_options(std::move(new_options[g]));
    const auto& params = groups[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      const StateKey key = state_key(params[i]);
      if (new_states[g][i]) {
        live[key] = std::move(new_states[g][i]);
      } else {
        live.erase(key);
      }
    }
  }
}

}  // namespace ctrainer
