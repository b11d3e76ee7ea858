// Parsing and validating a safetensors JSON header: each entry's dtype, shape and data offsets,
// the `__metadata__` strings, and that the tensors tile the data section exactly.
#include <ctrainer/integrations/safetensors_format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

namespace ctrainer::safetensors_detail {
namespace {

using json = nlohmann::json;

// A JSON value for an error message. Only scalars are dumped: dumping is recursive, and a deeply
// nested hostile value could exhaust the stack.
std::string describe(const json& v) {
  if (v.is_string()) return "the string " + shown(v.get_ref<const std::string&>());
  if (v.is_number() || v.is_boolean() || v.is_null()) return v.dump();
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " elements";
  return "an object";
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  constexpr std::size_t kMaxDims = 16;
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size() && i < kMaxDims; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() > kMaxDims) s += ", ... (" + std::to_string(shape.size()) + " dims)";
  return s + "]";
}

std::string range_string(std::uint64_t begin, std::uint64_t end) {
  // Appends rather than operator+ on temporaries: GCC 12 warns (-Wstringop-overflow) on those.
  std::string s(1, '[');
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  s += ']';
  return s;
}

// JSON numbers that are integers >= 0 and fit in u64 (the parser makes those number_unsigned).
std::optional<std::uint64_t> as_u64(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  }
  return std::nullopt;
}

// Parses JSON and rejects duplicate keys in any object: the DOM keeps only the last of them,
// which would silently hide a tensor or metadata entry.
json parse_json_rejecting_duplicates(std::string_view text, const std::string& source) {
  std::vector<std::set<std::string>> open_objects;
  std::optional<std::string> duplicate;
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && !duplicate &&
            !open_objects.back().insert(parsed.get_ref<const std::string&>()).second) {
          duplicate = parsed.get_ref<const std::string&>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  json root;
  try {
    root = json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    fail(source, std::string("header is not valid UTF-8 JSON: ") + e.what());
  }
  if (duplicate) fail(source, "duplicate key " + shown(*duplicate) + " in the header");
  return root;
}

SafetensorsTensorInfo parse_entry(const std::string& name, const json& entry,
                                  std::uint64_t data_len, const std::string& source) {
  if (!entry.is_object()) {
    fail_tensor(
        source, name,
        "entry must be an object with dtype, shape and data_offsets, got " + describe(entry));
  }
  auto field = [&](const char* key) -> const json& {
    auto it = entry.find(key);
    if (it == entry.end()) fail_tensor(source, name, std::string("missing '") + key + "'");
    return *it;
  };

  SafetensorsTensorInfo info;
  info.name = name;

  const json& dtype = field("dtype");
  if (!dtype.is_string()) {
    fail_tensor(source, name, "'dtype' must be a string, got " + describe(dtype));
  }
  const std::string& dtype_name = dtype.get_ref<const std::string&>();
  const DtypeInfo* dt = find_dtype(dtype_name);
  if (dt == nullptr) {
    fail_tensor(source, name,
                "unknown dtype " + shown(dtype_name) + " (supported: " + kSupportedList + ")");
  }
  info.dtype = dt->type;

  const json& shape = field("shape");
  if (!shape.is_array()) {
    fail_tensor(source, name,
                "'shape' must be an array of non-negative integers, got " + describe(shape));
  }
  constexpr auto kInt64Max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t numel = 1;
  // Product of max(dim, 1): libtorch computes contiguous strides from it in int64 even when
  // numel is 0, so it must not overflow either.
  std::uint64_t extent = 1;
  bool overflow = false;
  info.shape.reserve(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    std::optional<std::uint64_t> dim = as_u64(shape[i]);
    if (!dim || *dim > kInt64Max) {
      fail_tensor(source, name,
                  "'shape' must be an array of non-negative integers, element " +
                      std::to_string(i) + " is " + describe(shape[i]));
    }
    info.shape.push_back(static_cast<std::int64_t>(*dim));
    overflow |= __builtin_mul_overflow(numel, *dim, &numel);
    overflow |= __builtin_mul_overflow(extent, std::max<std::uint64_t>(*dim, 1), &extent);
  }
  std::uint64_t nbytes = 0;
  overflow |= extent > kInt64Max || __builtin_mul_overflow(numel, dt->size, &nbytes);
  if (overflow) {
    fail_tensor(source, name, "shape " + shape_string(info.shape) + " is too large");
  }

  const json& offsets = field("data_offsets");
  std::optional<std::uint64_t> begin, end;
  if (offsets.is_array() && offsets.size() == 2) {
    begin = as_u64(offsets[0]);
    end = as_u64(offsets[1]);
  }
  if (!begin || !end) {
    std::string got = describe(offsets);
    if (offsets.is_array() && offsets.size() == 2) {
      got = "[" + describe(offsets[0]) + ", " + describe(offsets[1]) + "]";
    }
    fail_tensor(
        source, name,
        "'data_offsets' must be an array of two non-negative integers [begin, end], got " + got);
  }
  info.data_begin = *begin;
  info.data_end = *end;
  const std::string range = range_string(*begin, *end);
  if (*end < *begin) fail_tensor(source, name, "data_offsets " + range + " end before they begin");
  if (*end > data_len) {
    fail_tensor(source, name,
                "data_offsets " + range + " are out of range: the data section is " +
                    std::to_string(data_len) + " bytes");
  }
  if (*end - *begin != nbytes) {
    fail_tensor(source, name,
                "data_offsets " + range + " span " + std::to_string(*end - *begin) +
                    " bytes, but shape " + shape_string(info.shape) + " of dtype " + dt->name +
                    " needs " + std::to_string(nbytes) + " bytes");
  }
  return info;
}

}  // namespace

// Validates the JSON header of a file whose data section holds `data_len` bytes.
SafetensorsHeader parse_header(std::string_view text, std::uint64_t data_len,
                               const std::string& source) {
  // The reference reader requires this too; it also rules out every non-object top level.
  if (text.empty() || text.front() != '{') {
    fail(source, "the header must be a JSON object starting with '{'");
  }
  // nlohmann's lexer takes a NUL byte for the end of input, which would accept "{}\0garbage";
  // JSON text never contains a raw NUL (strings must escape it).
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    fail(source, "header is not valid UTF-8 JSON: NUL byte at offset " + std::to_string(nul));
  }
  const json root = parse_json_rejecting_duplicates(text, source);
  if (!root.is_object()) fail(source, "the header must be a JSON object, got " + describe(root));

  SafetensorsHeader header;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) {
        fail(source, "'__metadata__' must be an object of string values, got " + describe(value));
      }
      for (const auto& [mkey, mvalue] : value.items()) {
        if (!mvalue.is_string()) {
          fail(source, "'__metadata__' must be an object of string values, but key " + shown(mkey) +
                           " holds " + describe(mvalue));
        }
        header.metadata.emplace(mkey, mvalue.get<std::string>());
      }
      continue;
    }
    header.tensors.push_back(parse_entry(key, value, data_len, source));
  }

  // Entries may come in any order in the JSON; their byte ranges must tile the data section.
  std::stable_sort(header.tensors.begin(), header.tensors.end(),
                   [](const SafetensorsTensorInfo& a, const SafetensorsTensorInfo& b) {
                     return std::pair(a.data_begin, a.data_end) <
                            std::pair(b.data_begin, b.data_end);
                   });
  std::uint64_t covered = 0;
  const SafetensorsTensorInfo* previous = nullptr;
  for (const auto& t : header.tensors) {
    if (t.data_begin > covered) {
      fail(source, "hole in the data section: bytes " + range_string(covered, t.data_begin) +
                       " belong to no tensor (tensor " + shown(t.name) + " starts at " +
                       std::to_string(t.data_begin) +
                       (previous ? ", tensor " + shown(previous->name) + " ends at " +
                                       std::to_string(covered)
                                 : std::string()) +
                       ")");
    }
    if (t.data_begin < covered) {
      fail(source, "tensor " + shown(t.name) + " at data_offsets " +
                       range_string(t.data_begin, t.data_end) + " overlaps tensor " +
                       shown(previous->name) + " at " +
                       range_string(previous->data_begin, previous->data_end));
    }
    covered = t.data_end;
    previous = &t;
  }
  if (covered != data_len) {
    fail(source, "the data section is " + std::to_string(data_len) +
                     " bytes but the tensors end at byte " + std::to_string(covered) + ": " +
                     std::to_string(data_len - covered) + " trailing bytes");
  }
  return header;
}

}  // namespace ctrainer::safetensors_detail
