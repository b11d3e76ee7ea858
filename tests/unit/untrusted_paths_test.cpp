// Paths and ranges read from files stay inside what they describe (issue 19, item 5): a
// checkpoint manifest listing "../../x", an absolute path or a link out of the folder; malformed
// manifest entries; a trainer_state.json whose best checkpoint points elsewhere; a sharded
// checkpoint whose slices reach outside their parameter. And the rendezvous store's socket is
// bound to MASTER_ADDR only.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <ctrainer/core/confined_path.h>
#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/distributed/process_group.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/distributed/sharded_state.h>
#include <ctrainer/distributed/store_listener.h>
#include <ctrainer/distributed/strategy.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>
#include <ctrainer/trainer/checkpoint/checkpoint_manager.h>

#include "support/process.h"
#include "support/test_data.h"

namespace ctrainer {
namespace untrusted_paths_test {
namespace fs = std::filesystem;
using nlohmann::json;

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// A checkpoint folder whose manifest lists `name` with the size and CRC of `target`'s bytes.
fs::path checkpoint_listing(const std::string& test, const std::string& name,
                            const fs::path& target) {
  const fs::path root = testing::fresh_output_dir(test);
  const fs::path folder = root / "checkpoint-1";
  fs::create_directories(folder);
  write_json_file(
      folder / kCheckpointManifest,
      {{"format_version", 1},
       {"step", 1},
       {"files", {{name, {{"size", fs::file_size(target)}, {"crc32", file_crc32(target)}}}}}});
  return folder;
}

TEST(ConfinedPath, OnlyPlainRelativePathsInsideTheFolder) {
  const fs::path folder = testing::fresh_output_dir("confined");
  fs::create_directories(folder / "sub");
  EXPECT_EQ(path_inside(folder, "model.safetensors"), folder / "model.safetensors");
  EXPECT_EQ(path_inside(folder, "sub/rank_0.json"), folder / "sub/rank_0.json");
  std::string why;
  EXPECT_FALSE(path_inside(folder, "../../x", &why));
  EXPECT_NE(why.find("climbs out"), std::string::npos) << why;
  EXPECT_FALSE(path_inside(folder, "sub/../../x", &why));
  EXPECT_FALSE(path_inside(folder, "/etc/hostname", &why));
  EXPECT_NE(why.find("is absolute"), std::string::npos) << why;
  EXPECT_FALSE(path_inside(folder, "", &why));
  fs::create_directory_symlink("/etc", folder / "out");
  EXPECT_FALSE(path_inside(folder, "out/hostname", &why));
  EXPECT_NE(why.find("through a link"), std::string::npos) << why;
  EXPECT_TRUE(is_inside(folder, folder / "sub"));
  EXPECT_FALSE(is_inside(folder / "sub", folder / "subway"));
}

TEST(UntrustedManifest, AFileOutsideTheCheckpointIsNeverRead) {
  // The target exists with exactly the recorded size and CRC: before the check, verification
  // read it and passed.
  const fs::path outside = testing::fresh_output_dir("outside_target");
  fs::create_directories(outside);
  write_text(outside / "secret.txt", "not part of any checkpoint");
  for (const auto& [name, expected] : std::vector<std::pair<std::string, std::string>>{
           {"../../outside_target/secret.txt", "climbs out"},
           {(outside / "secret.txt").string(), "is absolute"}}) {
    const fs::path folder = checkpoint_listing("manifest_escape", name, outside / "secret.txt");
    const auto problem = verify_checkpoint(folder);
    ASSERT_TRUE(problem);
    EXPECT_NE(problem->find("lists a file outside the checkpoint"), std::string::npos) << *problem;
    EXPECT_NE(problem->find(expected), std::string::npos) << *problem;
    EXPECT_FALSE(latest_complete_checkpoint(folder.parent_path()));
  }
  const fs::path folder = checkpoint_listing("manifest_link", "link", outside / "secret.txt");
  fs::create_symlink(outside / "secret.txt", folder / "link");
  const auto problem = verify_checkpoint(folder);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("through a link"), std::string::npos) << *problem;
}

TEST(UntrustedManifest, MalformedEntriesAreProblemsNotCrashes) {
  const fs::path root = testing::fresh_output_dir("manifest_malformed");
  const fs::path folder = root / "checkpoint-2";
  fs::create_directories(folder);
  write_text(folder / "a.json", "{}");
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"files", {{"a.json", {{"size", "3"}, {"crc32", 1}}}}}}, "needs an unsigned \"size\""},
      {{{"files", {{"a.json", {{"size", 3}}}}}}, "needs an unsigned \"size\" and \"crc32\""},
      {{{"files", {{"a.json", {{"size", -3}, {"crc32", 1}}}}}}, "needs an unsigned"},
      {{{"files", {{"a.json", 7}}}}, "needs an unsigned"},
      {{{"files", json::array()}}, "has no \"files\" object"},
      {{{"format_version", "1"}, {"files", json::object()}}, "\"format_version\" is not a whole"},
  };
  for (const auto& [manifest, expected] : cases) {
    write_json_file(folder / kCheckpointManifest, manifest);
    const auto problem = verify_checkpoint(folder);
    ASSERT_TRUE(problem) << manifest.dump();
    EXPECT_NE(problem->find(expected), std::string::npos) << *problem;
  }
}

TEST(UntrustedState, BestCheckpointOutsideTheOutputDirIsNotLoaded) {
  TrainingArguments args = testing::quiet_args("best_elsewhere");
  fs::create_directories(args.output_dir);
  ProcessInfo process;
  SingleDeviceStrategy strategy;
  CheckpointManager manager(args, process, strategy);
  MLPClassifier model(4, 8, 2);
  TrainerState state;
  // A complete checkpoint, but of another folder: a copied or edited trainer_state.json.
  const fs::path elsewhere = testing::fresh_output_dir("best_elsewhere_other");
  write_checkpoint_atomically(elsewhere, 5, [&](const fs::path& dir) {
    save_safetensors((dir / "model.safetensors").string(), {}, {});
  });
  state.best_model_checkpoint = checkpoint_path(elsewhere, 5).string();
  EXPECT_FALSE(manager.load_best_model(state, model));
  state.best_model_checkpoint = (fs::path(args.output_dir) / "not-a-checkpoint").string();
  EXPECT_FALSE(manager.load_best_model(state, model));
}

/// A one-rank sharded checkpoint of a 4-element parameter "w" whose slice is [begin, end).
fs::path sharded_checkpoint(int64_t begin, int64_t end, int64_t saved_elements) {
  const fs::path dir = testing::fresh_output_dir("sharded_slices");
  const fs::path folder = dir / kShardedStateFolder;
  fs::create_directories(folder);
  write_json_file(folder / "manifest.json",
                  {{"format_version", 1},
                   {"world_size", 1},
                   {"stage", 3},
                   {"optimizer", "adamw"},
                   {"parameters", {{"w", {{"shape", {4}}, {"dtype", "Float"}}}}}});
  write_json_file(
      folder / "rank_0.json",
      {{"pieces", {{{"name", "w"}, {"begin", begin}, {"end", end}, {"step", nullptr}}}}});
  save_safetensors((folder / "rank_0.safetensors").string(),
                   {{"master.w", at::arange(saved_elements, at::kFloat)}}, {{"format", "pt"}});
  return dir;
}

TEST(UntrustedShardedState, SlicesMustTileTheirParameter) {
  EXPECT_TRUE(consolidate_sharded_state(sharded_checkpoint(0, 4, 4))
                  .at("w")
                  .equal(at::arange(4, at::kFloat)));
  for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{-2, 2}, {2, 6}}) {
    try {
      consolidate_sharded_state(sharded_checkpoint(begin, end, 4));
      ADD_FAILURE() << "slice [" << begin << ", " << end << ") accepted";
    } catch (const ArgumentError& error) {
      // Refused by the range check of the index file or by the tiling check.
      const std::string what = error.what();
      EXPECT_TRUE(what.find("do not tile its 4 elements") != std::string::npos ||
                  what.find("rank_0.json: \"begin\" must be an integer in [0,") !=
                      std::string::npos)
          << what;
    }
  }
}

/// The local addresses (hex, as /proc/net/tcp* writes them) listening on `port`.
std::set<std::string> listening_addresses(int port) {
  std::set<std::string> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const size_t colon = local.rfind(':');
      if (state == "0A" && std::stoi(local.substr(colon + 1), nullptr, 16) == port)
        out.insert(local.substr(0, colon));
    }
  }
  return out;
}

TEST(StoreBinding, RankZeroServesTheStoreOnMasterAddrOnly) {
  ProcessInfo info;
  info.master_addr = "127.0.0.1";
  info.master_port = testing::free_port();
  ProcessGroupOptions options;
  options.timeout = std::chrono::seconds(30);
  ProcessGroup group(info, options);
  // c10d alone listens on "::" (every interface); 0100007F is 127.0.0.1.
  EXPECT_EQ(listening_addresses(info.master_port), std::set<std::string>{"0100007F"});
  group.shutdown();
}

TEST(StoreBinding, WildcardOnlyWhenAskedOrUnreachableOtherwise) {
  std::string why;
  const int port = testing::free_port();
  int fd = listen_for_store("0.0.0.0", port, false, &why);
  EXPECT_TRUE(why.empty());
  EXPECT_EQ(bound_port(fd), port);
  const auto everywhere = listening_addresses(port);
  ::close(fd);
  EXPECT_TRUE(everywhere.count("00000000000000000000000000000000") || everywhere.count("00000000"));
  // A loopback MASTER_ADDR in a job of several nodes: the others could never connect.
  fd = listen_for_store("127.0.0.1", port, /*multi_node=*/true, &why);
  EXPECT_NE(why.find("the other nodes cannot reach"), std::string::npos) << why;
  ::close(fd);
  try {
    listen_for_store("192.0.2.1", port, false, nullptr);  // TEST-NET-1: never local
    ADD_FAILURE() << "bound to an address of another machine";
  } catch (const DistributedError& error) {
    EXPECT_NE(std::string(error.what()).find("not an address of this machine"), std::string::npos)
        << error.what();
  }
}

}  // namespace untrusted_paths_test
}  // namespace ctrainer
