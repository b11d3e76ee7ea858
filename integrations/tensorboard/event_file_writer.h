#pragma once
/// \file TensorBoard event files written without TensorFlow or protobuf: the TFRecord framing
/// (length, masked CRC-32C of the length, record, masked CRC-32C of the record) around
/// hand-encoded `tensorflow.Event` protocol buffers (tensorboard/compat/proto/event.proto,
/// summary.proto, tensor.proto). Only the fields a training run needs are encoded: wall_time,
/// step, file_version, and summaries holding a scalar (simple_value, as torch's SummaryWriter
/// add_scalar writes it) or a text (a DT_STRING tensor with the "text" plugin's metadata, as
/// add_text writes it). TensorBoard's own reader reads them back
/// (tests/integrations/tensorboard_reader_check.py).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace ctrainer::tensorboard {

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `data`: TFRecord's checksum.
uint32_t crc32c(std::string_view data);

/// TFRecord's masked form of a CRC: rotated right by 15 bits plus 0xa282ead8, so that a CRC of
/// data that holds CRCs is not itself a plain CRC.
uint32_t masked_crc32c(std::string_view data);

/// This machine's host name, "localhost" when unknown (event file names, HF's default_logdir).
std::string host_name();

/// One TFRecord: little-endian uint64 length, its masked CRC, the bytes, their masked CRC.
std::string tfrecord(std::string_view record);

/// An event file in `log_dir` named as torch's SummaryWriter names it
/// ("events.out.tfevents.<unix seconds>.<hostname>.<pid>.<n>"), starting with the
/// "brain.Event:2" version record. Writes are buffered; flush() pushes them to the file.
class EventFileWriter {
 public:
  /// Creates `log_dir` when missing. Throws std::runtime_error naming the path when the folder
  /// or the file cannot be created.
  explicit EventFileWriter(const std::filesystem::path& log_dir);

  /// A scalar summary (TensorBoard's SCALARS tab), stored as a float32 like add_scalar.
  void add_scalar(const std::string& tag, double value, int64_t step);
  /// A text summary under "<tag>/text_summary" (TensorBoard's TEXT tab), like add_text.
  void add_text(const std::string& tag, const std::string& text, int64_t step);
  /// Writes the buffered records to disk. Throws std::runtime_error when the write fails.
  void flush();

  const std::filesystem::path& path() const { return path_; }

 private:
  void write_event(const std::string& event_fields);
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace ctrainer::tensorboard
