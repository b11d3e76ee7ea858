#include <ctrainer/integrations/tensorboard/event_file_writer.h>

#include <unistd.h>

#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <ctrainer/integrations/tensorboard/protobuf_encoder.h>

namespace ctrainer::tensorboard {
namespace {

namespace fs = std::filesystem;

std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    table[byte] = crc;
  }
  return table;
}

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Field numbers of the messages written (tensorboard/compat/proto/*.proto).
namespace event {
constexpr int kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5;
}
namespace summary {
constexpr int kValue = 1;
}
namespace value {
constexpr int kTag = 1, kSimpleValue = 2, kTensor = 8, kMetadata = 9;
}
namespace metadata {
constexpr int kPluginData = 1;
}
namespace plugin_data {
constexpr int kPluginName = 1;
}
namespace tensor {
constexpr int kDtype = 1, kShape = 2, kStringVal = 8;
constexpr uint64_t kDtString = 7;  // tensorflow.DataType.DT_STRING
}  // namespace tensor
namespace shape {
constexpr int kDim = 2;
}
namespace dim {
constexpr int kSize = 1;
}

std::string summary_with(const std::string& summary_value) {
  ProtobufEncoder summary_message;
  summary_message.message(summary::kValue, summary_value);
  ProtobufEncoder fields;
  fields.message(event::kSummary, summary_message.bytes());
  return fields.bytes();
}

}  // namespace

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "localhost";
  return name.data();
}

uint32_t crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = make_crc32c_table();
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : data) crc = table[(crc ^ static_cast<uint8_t>(c)) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view record) {
  // TFRecord's integers are little-endian; so is every machine ctrainer builds for (x86-64,
  // aarch64), which the static_assert below keeps honest.
  static_assert(std::endian::native == std::endian::little);
  const uint64_t length = record.size();
  std::string header(sizeof(length), '\0');
  std::memcpy(header.data(), &length, sizeof(length));
  const uint32_t header_crc = masked_crc32c(header);
  const uint32_t record_crc = masked_crc32c(record);
  std::string out = header;
  out.append(reinterpret_cast<const char*>(&header_crc), sizeof(header_crc));
  out.append(record);
  out.append(reinterpret_cast<const char*>(&record_crc), sizeof(record_crc));
  return out;
}

EventFileWriter::EventFileWriter(const fs::path& log_dir) {
  std::error_code error;
  fs::create_directories(log_dir, error);
  if (error)
    throw std::runtime_error("cannot create the TensorBoard folder " + log_dir.string() + ": " +
                             error.message() + " (set --logging_dir to a writable folder)");
  static std::atomic<int> files_opened{0};
  const auto seconds = static_cast<int64_t>(unix_seconds_now());
  std::string name = std::to_string(seconds);
  if (name.size() < 10) name.insert(0, 10 - name.size(), '0');  // torch's "%010d"
  path_ = log_dir / ("events.out.tfevents." + name + "." + host_name() + "." +
                     std::to_string(::getpid()) + "." + std::to_string(files_opened++));
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_)
    throw std::runtime_error("cannot write the TensorBoard event file " + path_.string() +
                             " (set --logging_dir to a writable folder)");
  ProtobufEncoder version;
  version.string(event::kFileVersion, "brain.Event:2");
  write_event(version.bytes());
  flush();
}

void EventFileWriter::write_event(const std::string& event_fields) {
  ProtobufEncoder event;
  event.fixed64_double(event::kWallTime, unix_seconds_now());
  out_ << tfrecord(event.bytes() + event_fields);
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  ProtobufEncoder summary_value;
  summary_value.string(value::kTag, tag);
  summary_value.fixed32_float(value::kSimpleValue, static_cast<float>(value));
  ProtobufEncoder step_field;
  step_field.varint(event::kStep, static_cast<uint64_t>(step));
  write_event(step_field.bytes() + summary_with(summary_value.bytes()));
}

void EventFileWriter::add_text(const std::string& tag, const std::string& text, int64_t step) {
  ProtobufEncoder plugin;
  plugin.string(plugin_data::kPluginName, "text");  // content: TextPluginData v0, all defaults
  ProtobufEncoder meta;
  meta.message(metadata::kPluginData, plugin.bytes());
  ProtobufEncoder one;
  one.varint(dim::kSize, 1);
  ProtobufEncoder tensor_shape;
  tensor_shape.message(shape::kDim, one.bytes());
  ProtobufEncoder tensor_message;
  tensor_message.varint(tensor::kDtype, tensor::kDtString);
  tensor_message.message(tensor::kShape, tensor_shape.bytes());
  tensor_message.string(tensor::kStringVal, text);
  ProtobufEncoder summary_value;
  summary_value.string(value::kTag, tag + "/text_summary");
  summary_value.message(value::kMetadata, meta.bytes());
  summary_value.message(value::kTensor, tensor_message.bytes());
  ProtobufEncoder step_field;
  step_field.varint(event::kStep, static_cast<uint64_t>(step));
  write_event(step_field.bytes() + summary_with(summary_value.bytes()));
}

void EventFileWriter::flush() {
  out_.flush();
  if (!out_)
    throw std::runtime_error("writing the TensorBoard event file " + path_.string() +
                             " failed (disk full or folder removed?)");
}

}  // namespace ctrainer::tensorboard
