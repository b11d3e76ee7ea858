// The TensorBoard writer's pieces against known values (CRC-32C's check value, TFRecord's mask,
// the protobuf encoding examples of protobuf.dev), HF's tag names, and the callback's rules:
// only the world's main process writes, and a folder that cannot be written never stops the
// training. tests/parity/tensorboard_events.py reads whole runs back with TensorBoard itself.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>

#include <ctrainer/core/logging.h>
#include <ctrainer/integrations/tensorboard/event_file_writer.h>
#include <ctrainer/integrations/tensorboard/protobuf_encoder.h>
#include <ctrainer/trainer/callbacks/report_to.h>
#include <ctrainer/trainer/callbacks/tensorboard_callback.h>

namespace ctrainer {
namespace tensorboard_test {
namespace fs = std::filesystem;
using namespace tensorboard;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ctrainer_tensorboard_" + name);
  fs::remove_all(dir);
  return dir;
}

TEST(TensorBoardWriter, Crc32cHasTheCastagnoliCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC-32C catalogue's check value
  EXPECT_EQ(crc32c(""), 0u);
  // TFRecord's mask: rotate right by 15, add 0xa282ead8.
  EXPECT_EQ(masked_crc32c(""), 0xa282ead8u);
  const uint32_t crc = 0xE3069283u;
  EXPECT_EQ(masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(TensorBoardWriter, TfrecordFramesLengthAndChecksums) {
  const std::string record = "payload";
  const std::string framed = tfrecord(record);
  ASSERT_EQ(framed.size(), 8 + 4 + record.size() + 4);
  uint64_t length = 0;
  std::memcpy(&length, framed.data(), 8);
  EXPECT_EQ(length, record.size());
  uint32_t header_crc = 0, record_crc = 0;
  std::memcpy(&header_crc, framed.data() + 8, 4);
  std::memcpy(&record_crc, framed.data() + 12 + record.size(), 4);
  EXPECT_EQ(header_crc, masked_crc32c(framed.substr(0, 8)));
  EXPECT_EQ(framed.substr(12, record.size()), record);
  EXPECT_EQ(record_crc, masked_crc32c(record));
}

TEST(TensorBoardWriter, ProtobufEncodingMatchesTheWireFormatExamples) {
  ProtobufEncoder varint;
  varint.varint(1, 150);  // protobuf.dev's "08 96 01"
  EXPECT_EQ(varint.bytes(), std::string("\x08\x96\x01", 3));
  ProtobufEncoder text;
  text.string(2, "testing");  // "12 07 74 65 73 74 69 6e 67"
  EXPECT_EQ(text.bytes(), std::string("\x12\x07testing", 9));
  ProtobufEncoder real;
  real.fixed32_float(2, 1.0f);  // key 0x15, then 1.0f little-endian
  EXPECT_EQ(real.bytes(), std::string("\x15\x00\x00\x80\x3f", 5));
  ProtobufEncoder wide;
  wide.fixed64_double(1, 1.0);  // key 0x09, then 1.0 little-endian
  EXPECT_EQ(wide.bytes(), std::string("\x09\x00\x00\x00\x00\x00\x00\xf0\x3f", 9));
}

TEST(TensorBoardWriter, FileIsNamedAsTorchNamesItAndStartsWithTheVersionRecord) {
  const fs::path dir = fresh_dir("writer");
  fs::path path;
  {
    EventFileWriter writer(dir / "nested");
    writer.add_scalar("train/loss", 0.5, 3);
    writer.flush();
    path = writer.path();
  }
  EXPECT_EQ(path.parent_path(), dir / "nested");
  EXPECT_EQ(path.filename().string().rfind("events.out.tfevents.", 0), 0u) << path;
  std::ifstream in(path, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(data.find("brain.Event:2"), std::string::npos);
  EXPECT_NE(data.find("train/loss"), std::string::npos);
  fs::remove_all(dir);
}

TEST(TensorBoardCallbackTest, TagsFollowHfRewriteLogs) {
  EXPECT_EQ(tensorboard_tag("loss"), "train/loss");
  EXPECT_EQ(tensorboard_tag("learning_rate"), "train/learning_rate");
  EXPECT_EQ(tensorboard_tag("eval_loss"), "eval/loss");
  EXPECT_EQ(tensorboard_tag("eval_accuracy"), "eval/accuracy");
  EXPECT_EQ(tensorboard_tag("test_f1"), "test/f1");
  EXPECT_EQ(tensorboard_tag("evaluation"), "train/evaluation");  // no "eval_" prefix
}

TEST(TensorBoardCallbackTest, LoggingDirIsTheFlagThenTheEnvironmentThenRunsUnderOutputDir) {
  TrainingArguments args;
  args.output_dir = "/tmp/out";
  ::unsetenv("TENSORBOARD_LOGGING_DIR");
  const fs::path fallback = tensorboard_logging_dir(args);
  EXPECT_EQ(fallback.parent_path(), fs::path("/tmp/out/runs"));
  ::setenv("TENSORBOARD_LOGGING_DIR", "/tmp/from_env", 1);
  EXPECT_EQ(tensorboard_logging_dir(args), fs::path("/tmp/from_env"));
  args.logging_dir = "/tmp/flag";
  EXPECT_EQ(tensorboard_logging_dir(args), fs::path("/tmp/flag"));
  ::unsetenv("TENSORBOARD_LOGGING_DIR");
}

TEST(TensorBoardCallbackTest, OnlyTheWorldsMainProcessWrites) {
  const fs::path dir = fresh_dir("replica");
  TrainingArguments args;
  args.logging_dir = dir.string();
  TrainerState state;
  state.is_world_process_zero = false;
  TrainerControl control;
  const nlohmann::json logs = {{"loss", 0.25}};
  CallbackContext context;
  context.logs = &logs;
  TensorBoardCallback callback;
  callback.on_train_begin(args, state, control, context);
  callback.on_log(args, state, control, context);
  EXPECT_TRUE(callback.event_file().empty());
  EXPECT_FALSE(fs::exists(dir));

  state.is_world_process_zero = true;
  callback.on_log(args, state, control, context);
  EXPECT_EQ(callback.event_file().parent_path(), dir);
  EXPECT_TRUE(fs::exists(callback.event_file()));
  fs::remove_all(dir);
}

TEST(TensorBoardCallbackTest, AnUnwritableFolderIsReportedAndNeverStopsTraining) {
  const fs::path blocker = fresh_dir("blocker");
  std::ofstream(blocker) << "a file where the folder should be";
  TrainingArguments args;
  args.logging_dir = (blocker / "tb").string();
  TrainerState state;
  TrainerControl control;
  const nlohmann::json logs = {{"loss", 0.25}};
  CallbackContext context;
  context.logs = &logs;
  TensorBoardCallback callback;
  std::ostringstream log;
  logging::configure(0, spdlog::level::warn, std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  EXPECT_NO_THROW(callback.on_train_begin(args, state, control, context));
  EXPECT_NO_THROW(callback.on_log(args, state, control, context));
  logging::logger()->flush();
  logging::configure(0, logging::get_verbosity());  // back to stderr for the other tests
  EXPECT_TRUE(callback.event_file().empty());
  // Reported once, as a warning naming the integration, the folder and what stops.
  const std::string text = log.str();
  EXPECT_NE(text.find("[warning] --report_to tensorboard: "), std::string::npos) << text;
  EXPECT_NE(text.find((blocker / "tb").string()), std::string::npos) << text;
  EXPECT_NE(text.find("no longer reporting to TensorBoard"), std::string::npos) << text;
  EXPECT_EQ(text.find("no longer reporting"), text.rfind("no longer reporting")) << text;
  fs::remove(blocker);
}

TEST(TensorBoardCallbackTest, ReportToTensorboardAndAllAddTheCallback) {
  TrainingArguments args;
  args.report_to = {"tensorboard"};
  auto callbacks = report_to_callbacks(args);
  ASSERT_EQ(callbacks.size(), 1u);
  EXPECT_EQ(callbacks[0]->name(), "TensorBoardCallback");
  args.report_to = {"all"};
  EXPECT_EQ(report_to_callbacks(args).size(), 1u);
  args.report_to = {"none"};
  EXPECT_TRUE(report_to_callbacks(args).empty());
}

}  // namespace tensorboard_test
}  // namespace ctrainer
