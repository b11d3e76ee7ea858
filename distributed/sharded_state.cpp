#include <ctrainer/distributed/sharded_state.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/core/optimizer_kind.h>
#include <ctrainer/distributed/sharded_strategy.h>
#include <ctrainer/integrations/safetensors.h>

namespace ctrainer {
namespace fs = std::filesystem;

namespace {

constexpr int kFormatVersion = 1;

std::string rank_stem(int64_t rank) {
  return "rank_" + std::to_string(rank);
}

// The manifest and the ranks' index files come from disk: every value is checked for its type
// and range before use, and a problem names the file and the key (never a JSON library error,
// nor a cast of 1e300 to an integer).
const nlohmann::json& member(const nlohmann::json& object, const char* key, const fs::path& file) {
  if (!object.is_object())
    throw ArgumentError(file.string() + ": expected a JSON object holding \"" + key + "\", got " +
                        object.dump().substr(0, 80));
  const auto it = object.find(key);
  if (it == object.end()) throw ArgumentError(file.string() + " lacks \"" + key + "\"");
  return *it;
}

int64_t integer_in(const nlohmann::json& value, const char* key, const fs::path& file, int64_t min,
                   int64_t max) {
  if (!value.is_number_integer() ||
      (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(max)) ||
      value.get<int64_t>() < min || value.get<int64_t>() > max)
    throw ArgumentError(file.string() + ": \"" + key + "\" must be an integer in [" +
                        std::to_string(min) + ", " + std::to_string(max) + "], got " +
                        value.dump().substr(0, 80));
  return value.get<int64_t>();
}

const std::string& string_of(const nlohmann::json& value, const char* key, const fs::path& file) {
  if (!value.is_string())
    throw ArgumentError(file.string() + ": \"" + key + "\" must be a string, got " +
                        value.dump().substr(0, 80));
  return value.get_ref<const std::string&>();
}

/// Element counts and offsets stay below 2^53 (far above any parameter), so sums and products of
/// them cannot overflow.
constexpr int64_t kMaxElements = int64_t{1} << 53;

/// A parameter's "shape" in the manifest: non-negative sizes whose product is at most
/// kMaxElements.
std::vector<int64_t> saved_shape(const nlohmann::json& parameter, const std::string& name,
                                 const fs::path& file) {
  const nlohmann::json& shape = member(parameter, "shape", file);
  if (!shape.is_array())
    throw ArgumentError(file.string() + ": the shape of " + name + " must be an array, got " +
                        shape.dump().substr(0, 80));
  std::vector<int64_t> sizes;
  int64_t numel = 1;
  for (const auto& size : shape) {
    sizes.push_back(integer_in(size, "shape", file, 0, kMaxElements));
    if (__builtin_mul_overflow(numel, sizes.back(), &numel) || numel > kMaxElements)
      throw ArgumentError(file.string() + ": the shape of " + name + " " +
                          shape.dump().substr(0, 80) + " has more than 2^53 elements");
  }
  return sizes;
}

OptimizerKind kind_of(const torch::optim::Optimizer& optimizer) {
  if (optimizer.param_groups().empty())
    throw ArgumentError("sharded checkpoint: the optimizer has no param group");
  if (auto kind = optimizer_kind(optimizer.param_groups().front().options())) return *kind;
  throw ArgumentError(
      "sharded checkpoint: only AdamW, Adam and SGD state can be saved sharded (the optimizers "
      "ctrainer creates)");
}

/// The state of one optimizer tensor (empty when it was never stepped).
ParamStateBuffers piece_state(const torch::optim::Optimizer& optimizer, const at::Tensor& piece) {
  auto it = optimizer.state().find(piece.unsafeGetTensorImpl());
  if (it == optimizer.state().end()) return {};
  return param_state_buffers(*it->second);
}

/// A saved slice of one parameter: elements [begin, end) of the flattened parameter.
struct SavedPiece {
  int64_t begin = 0, end = 0;
  std::optional<int64_t> step;
  std::map<std::string, at::Tensor> tensors;  ///< "master" and the state buffers
};

/// Every slice the ranks of a sharded checkpoint saved, by parameter name.
std::map<std::string, std::vector<SavedPiece>> read_saved_pieces(const fs::path& dir,
                                                                 const nlohmann::json& manifest) {
  const fs::path folder = dir / kShardedStateFolder;
  auto fail = [&](const std::string& why) {
    return ArgumentError("sharded checkpoint " + dir.string() + ": " + why);
  };
  const fs::path manifest_file = folder / "manifest.json";
  const int64_t saved_world = integer_in(member(manifest, "world_size", manifest_file),
                                         "world_size", manifest_file, 1, int64_t{1} << 24);
  std::map<std::string, std::vector<SavedPiece>> saved;
  for (int64_t r = 0; r < saved_world; ++r) {
    const fs::path file = folder / (rank_stem(r) + ".safetensors");
    const fs::path index_file = folder / (rank_stem(r) + ".json");
    const nlohmann::json index =
        read_json_file(index_file, "the sharded-state index of rank " + std::to_string(r));
    SafetensorsFile tensors = load_safetensors(file.string());
    const nlohmann::json& entries = member(index, "pieces", index_file);
    if (!entries.is_array())
      throw ArgumentError(index_file.string() + ": \"pieces\" must be an array, got " +
                          entries.dump().substr(0, 80));
    for (const auto& entry : entries) {
      SavedPiece piece;
      const std::string name = string_of(member(entry, "name", index_file), "name", index_file);
      piece.begin =
          integer_in(member(entry, "begin", index_file), "begin", index_file, 0, kMaxElements);
      piece.end = integer_in(member(entry, "end", index_file), "end", index_file, piece.begin,
                             kMaxElements);
      const nlohmann::json& step = member(entry, "step", index_file);
      if (!step.is_null()) piece.step = integer_in(step, "step", index_file, 0, kMaxElements);
      const std::string suffix = "." + name;
      for (auto& [key, value] : tensors.tensors) {
        if (key.size() <= suffix.size() ||
            key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0)
          continue;
        const std::string kind_key = key.substr(0, key.size() - suffix.size());
        if (kind_key.find('.') != std::string::npos) continue;  // a longer name ending in ours
        if (value.numel() != piece.end - piece.begin)
          throw fail(file.string() + ": " + key + " has " + std::to_string(value.numel()) +
                     " elements but its index says " + std::to_string(piece.end - piece.begin));
        piece.tensors[kind_key] = value.reshape(-1);
      }
      if (!piece.tensors.count("master")) throw fail(file.string() + " lacks master." + name);
      saved[name].push_back(std::move(piece));
    }
  }
  // The ranks' slices come from files: each parameter's must tile [0, numel) exactly, so that
  // no index outside the parameter is written and no gap or overlap goes unnoticed.
  const nlohmann::json& parameters = manifest.at("parameters");  // checked by read_manifest
  for (auto& [name, pieces] : saved) {
    if (!parameters.contains(name))
      throw fail("the ranks' files hold " + name + ", which the manifest does not list");
    const int64_t numel =
        c10::multiply_integers(saved_shape(parameters.at(name), name, manifest_file));
    std::sort(pieces.begin(), pieces.end(),
              [](const SavedPiece& a, const SavedPiece& b) { return a.begin < b.begin; });
    int64_t next = 0;
    for (const SavedPiece& piece : pieces) {
      if (piece.begin != next || piece.end < piece.begin || piece.end > numel)
        throw fail("the saved slices of " + name + " do not tile its " + std::to_string(numel) +
                   " elements: [" + std::to_string(piece.begin) + ", " + std::to_string(piece.end) +
                   ") after " + std::to_string(next) + " (a rank's index file is corrupted)");
      next = piece.end;
    }
  }
  return saved;
}

nlohmann::json read_manifest(const fs::path& dir) {
  const fs::path path = dir / kShardedStateFolder / "manifest.json";
  nlohmann::json manifest = read_json_file(path, "the sharded-state manifest");
  if (!manifest.is_object() || manifest.value("format_version", nlohmann::json()) != kFormatVersion)
    throw ArgumentError(path.string() + " has format_version " +
                        (manifest.is_object()
                             ? manifest.value("format_version", nlohmann::json(nullptr)).dump()
                             : std::string("none (not a JSON object)")) +
                        ", expected " + std::to_string(kFormatVersion));
  // What the readers below take from it, checked once here.
  string_of(member(manifest, "optimizer", path), "optimizer", path);
  const nlohmann::json& parameters = member(manifest, "parameters", path);
  if (!parameters.is_object())
    throw ArgumentError(path.string() + ": \"parameters\" must be an object, got " +
                        parameters.dump().substr(0, 80));
  for (const auto& [name, parameter] : parameters.items()) {
    saved_shape(parameter, name, path);
    string_of(member(parameter, "dtype", path), "dtype", path);
  }
  return manifest;
}

}  // namespace

std::map<std::string, at::Tensor> consolidate_sharded_state(const fs::path& dir) {
  const nlohmann::json manifest = read_manifest(dir);
  const auto saved = read_saved_pieces(dir, manifest);
  std::map<std::string, at::Tensor> weights;
  for (const auto& [name, info] : manifest.at("parameters").items()) {
    const auto shape = info.at("shape").get<std::vector<int64_t>>();
    const at::ScalarType dtype = info.at("dtype").get<std::string>() == "Float"      ? at::kFloat
                                 : info.at("dtype").get<std::string>() == "BFloat16" ? at::kBFloat16
                                 : info.at("dtype").get<std::string>() == "Half"     ? at::kHalf
                                                                                     : at::kDouble;
    // Coverage first: the manifest's shape alone must not decide how much memory is taken.
    const int64_t numel = c10::multiply_integers(shape);
    int64_t covered = 0;
    const auto found = saved.find(name);
    if (found != saved.end())
      for (const SavedPiece& piece : found->second) covered += piece.end - piece.begin;
    if (covered != numel)
      throw ArgumentError("sharded checkpoint " + dir.string() + ": the ranks' files cover " +
                          std::to_string(covered) + " of the " + std::to_string(numel) +
                          " elements of " + name + " (a rank's files are missing)");
    at::Tensor flat = at::empty({numel}, at::kFloat);
    if (found != saved.end())
      for (const SavedPiece& piece : found->second)
        flat.narrow(0, piece.begin, piece.end - piece.begin).copy_(piece.tensors.at("master"));
    weights[name] = flat.view(shape).to(dtype);
  }
  return weights;
}

namespace {}  // namespace

bool has_sharded_state(const fs::path& dir) {
  return fs::exists(dir / kShardedStateFolder / "manifest.json");
}

void save_sharded_state(const ShardedStrategy& strategy, const torch::optim::Optimizer& optimizer,
                        const fs::path& dir, int64_t rank) {
  const OptimizerKind kind = kind_of(optimizer);
  const fs::path folder = dir / kShardedStateFolder;
  fs::create_directories(folder);
  std::map<std::string, at::Tensor> tensors;
  nlohmann::json pieces = nlohmann::json::array();
  nlohmann::json parameters = nlohmann::json::object();
  for (const auto& segment : strategy.segments()) {
    const auto& members = segment->layout().members;
    for (const auto& m : members)
      parameters[m.name] = {{"shape", m.parameter.sizes().vec()},
                            {"dtype", std::string(c10::toString(m.parameter.scalar_type()))}};
    const auto& slices = segment->owned_slices();
    for (std::size_t i = 0; i < slices.size(); ++i) {
      const std::string& name = members[slices[i].member].name;
      const at::Tensor& piece = segment->optimizer_pieces()[i];
      // Copies: the files must hold this step's values, not views the next step changes.
      tensors["master." + name] = piece.detach().to(at::kCPU).clone();
      const ParamStateBuffers state = piece_state(optimizer, piece);
      for (const auto& [buffer, value] : state.buffers)
        tensors[buffer + "." + name] = value.detach().to(at::kCPU).clone();
      nlohmann::json entry = {{"name", name}, {"begin", slices[i].begin}, {"end", slices[i].end}};
      entry["step"] = state.step ? nlohmann::json(*state.step) : nlohmann::json(nullptr);
      pieces.push_back(std::move(entry));
    }
  }
  save_safetensors((folder / (rank_stem(rank) + ".safetensors")).string(), tensors,
                   {{"format", "pt"}});
  write_json_file(folder / (rank_stem(rank) + ".json"), {{"pieces", std::move(pieces)}});
  if (rank == 0)
    write_json_file(folder / "manifest.json",
                    {{"format_version", kFormatVersion},
                     {"world_size", strategy.shard_world_size()},
                     {"stage", static_cast<int>(strategy.options().stage)},
                     {"optimizer", optimizer_kind_name(kind)},
                     {"parameters", std::move(parameters)}});
}

void load_sharded_state(ShardedStrategy& strategy, torch::optim::Optimizer& optimizer,
                        const fs::path& dir) {
  const nlohmann::json manifest = read_manifest(dir);
  auto fail = [&](const std::string& why) {
    return ArgumentError("--resume_from_checkpoint " + dir.string() + ": " + why);
  };
  const OptimizerKind kind = kind_of(optimizer);
  if (manifest.at("optimizer").get<std::string>() != optimizer_kind_name(kind))
    throw fail("the checkpoint holds " + manifest.at("optimizer").get<std::string>() +
               " state but this run's optimizer is " + optimizer_kind_name(kind));
  // The run's parameters must be the saved ones, name for name and shape for shape.
  const auto& saved_parameters = manifest.at("parameters");
  std::size_t run_parameters = 0;
  for (const auto& segment : strategy.segments()) {
    for (const auto& m : segment->layout().members) {
      ++run_parameters;
      if (!saved_parameters.contains(m.name))
        throw fail("parameter " + m.name + " is not in the checkpoint");
      const auto shape = saved_parameters.at(m.name).at("shape").get<std::vector<int64_t>>();
      if (shape != m.parameter.sizes().vec())
        throw fail("parameter " + m.name + " has shape " + nlohmann::json(shape).dump() +
                   " in the checkpoint but " + nlohmann::json(m.parameter.sizes().vec()).dump() +
                   " in this run");
    }
  }
  if (saved_parameters.size() != run_parameters)
    throw fail("the checkpoint has " + std::to_string(saved_parameters.size()) +
               " trainable parameters but this run has " + std::to_string(run_parameters));

  const std::map<std::string, std::vector<SavedPiece>> saved = read_saved_pieces(dir, manifest);

  // Re-cut: each of this rank's slices is assembled from the saved slices that overlap it.
  struct Assembled {
    at::Tensor piece;
    ParamStateBuffers state;
    at::Tensor master;
  };
  std::vector<Assembled> assembled;
  for (const auto& segment : strategy.segments()) {
    const auto& members = segment->layout().members;
    const auto& slices = segment->owned_slices();
    for (std::size_t i = 0; i < slices.size(); ++i) {
      const std::string& name = members[slices[i].member].name;
      const at::Tensor& piece = segment->optimizer_pieces()[i];
      Assembled out;
      out.piece = piece;
      out.master = at::empty({slices[i].numel()}, at::kFloat);
      int64_t covered = 0;
      std::map<std::string, at::Tensor> buffers;
      const auto found = saved.find(name);
      for (const SavedPiece& from :
           found == saved.end() ? std::vector<SavedPiece>{} : found->second) {
        const int64_t begin = std::max(from.begin, slices[i].begin);
        const int64_t end = std::min(from.end, slices[i].end);
        if (begin >= end) continue;
        covered += end - begin;
        out.state.step = from.step;
        for (const auto& [key, value] : from.tensors) {
          at::Tensor& target = key == "master" ? out.master : buffers[key];
          if (!target.defined()) target = at::zeros({slices[i].numel()}, value.options());
          target.narrow(0, begin - slices[i].begin, end - begin)
              .copy_(value.narrow(0, begin - from.begin, end - begin));
        }
      }
      if (covered != slices[i].numel())
        throw fail("the sharded state covers " + std::to_string(covered) + " of the " +
                   std::to_string(slices[i].numel()) + " elements [" +
                   std::to_string(slices[i].begin) + ", " + std::to_string(slices[i].end) +
                   ") of " + name + " (a rank's files are missing or truncated)");
      for (auto& [key, value] : buffers)
        out.state.buffers[key] = value.to(piece.device(), piece.scalar_type()).view(piece.sizes());
      assembled.push_back(std::move(out));
    }
  }

  // Everything was read and checked: now the optimizer and the masters change.
  at::NoGradGuard no_grad;
  for (auto& a : assembled) {
    a.piece.copy_(a.master);
    if (a.state.buffers.empty()) {
      optimizer.state().erase(a.piece.unsafeGetTensorImpl());
      continue;
    }
    optimizer.state()[a.piece.unsafeGetTensorImpl()] = make_param_state(kind, a.state);
  }
  strategy.parameters_from_master();
}

void ShardedStrategy::save_sharded_state(const torch::optim::Optimizer& optimizer,
                                         const fs::path& dir) const {
  // HYBRID_SHARD: the other nodes hold copies of node 0's shards.
  if (replica_index() == 0) ctrainer::save_sharded_state(*this, optimizer, dir, shard_rank());
}

std::vector<fs::path> ShardedStrategy::sharded_state_files_of_other_processes() const {
  std::vector<fs::path> files;
  for (int64_t rank = 1; rank < shard_world_size(); ++rank)
    for (const char* extension : {".safetensors", ".json"})
      files.push_back(fs::path(kShardedStateFolder) / (rank_stem(rank) + extension));
  return files;
}

void ShardedStrategy::load_sharded_state(torch::optim::Optimizer& optimizer, const fs::path& dir) {
  ctrainer::load_sharded_state(*this, optimizer, dir);
}

}  // namespace ctrainer
