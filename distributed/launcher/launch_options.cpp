#include <ctrainer/distributed/launcher/launch_options.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include <boost/program_options.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher/accelerate_config.h>
#include <ctrainer/distributed/sagemaker_cluster.h>

namespace ctrainer::launcher {
namespace {

namespace po = boost::program_options;

constexpr const char* kUsage =
    "usage: ctrainer-run [options] program [program arguments...]\n"
    "Starts --nproc-per-node copies of `program` with the environment torchrun gives its\n"
    "workers (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...), supervises them,\n"
    "and restarts the whole group up to --max-restarts times when one fails.\n"
    "With --rdzv-backend c10d (--nnodes MIN:MAX), an elastic job: ctrainer-run-elastic takes "
    "over.\n"
    "Flags accept torchrun's dash and underscore spellings (--nproc-per-node, --nproc_per_node).";

po::options_description describe_options() {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "print this help")
    ("nnodes", po::value<std::string>()->default_value("1"),
     "number of nodes, or MIN:MAX with --rdzv-backend c10d (an elastic job: it runs on any "
     "number of nodes in the range and restarts its workers when one leaves or joins)")
    ("nproc-per-node", po::value<std::string>()->default_value("1"),
     "workers per node: a number, cpu (one per CPU core), gpu (one per GPU) or auto "
     "(gpu when GPUs are present, else cpu)")
    ("node-rank", po::value<int64_t>()->default_value(0), "rank of this node (multi-node)")
    ("master-addr", po::value<std::string>()->default_value("127.0.0.1"),
     "host of rank 0, which serves the rendezvous store")
    ("master-port", po::value<int>()->default_value(29500), "port of the rendezvous store")
    ("rdzv-endpoint", po::value<std::string>(),
     "host[:port] of the rendezvous store; static: overrides --master-addr/--master-port; c10d: "
     "the store the nodes meet at (port 29400 when none is given)")
    ("rdzv-backend", po::value<std::string>()->default_value("static"),
     "rendezvous backend: static (fixed --nnodes and --node-rank), or c10d (nodes join rounds "
     "on a TCPStore at --rdzv-endpoint; node ranks come from the round)")
    ("rdzv-id", po::value<std::string>(),
     "job id, passed to workers as TORCHELASTIC_RUN_ID; c10d: the nodes of a job share it")
    ("rdzv-conf", po::value<std::string>(),
     "c10d only: key=value,... of is_host (1/0), last_call_timeout and join_timeout (seconds)")
    ("local-addr", po::value<std::string>(),
     "c10d only: this node's address as the other nodes reach it (default: the address that "
     "routes to --rdzv-endpoint)")
    ("standalone", po::bool_switch(),
     "single-node job on 127.0.0.1 with a free port (ignores --master-addr/--master-port)")
    ("max-restarts", po::value<int64_t>()->default_value(0),
     "restarts of the whole worker group after a failure")
    ("monitor-interval", po::value<double>()->default_value(0.1),
     "seconds between checks of the workers")
    ("grace-period", po::value<double>()->default_value(30),
     "seconds a worker gets between SIGTERM and SIGKILL when the group is stopped "
     "(ctrainer-run only; torchrun uses 30)")
    ("role", po::value<std::string>()->default_value("default"), "ROLE_NAME of the workers")
    ("redirects,r", po::value<std::string>()->default_value("0"),
     "streams written to <log-dir>/attempt_<n>/<local rank>/{stdout,stderr}.log instead of the "
     "console: 0 none, 1 stdout, 2 stderr, 3 both; or per local rank, e.g. 0:1,1:3")
    ("tee,t", po::value<std::string>()->default_value("0"),
     "streams written to the log files and to the console (prefixed [<role><local rank>]:), "
     "same syntax as --redirects")
    ("log-dir", po::value<std::string>(),
     "folder of the worker logs (default: a new temporary folder when logs are written)")
    ("local-ranks-filter", po::value<std::string>(),
     "comma-separated local ranks whose output reaches the console, e.g. 0")
    ("no-python", po::bool_switch(),
     "accepted for torchrun compatibility; ctrainer-run always starts the program itself")
    ("start-method", po::value<std::string>(),
     "accepted for torchrun compatibility (spawn, fork, forkserver); has no effect")
    ("module,m", po::bool_switch(), "refused: ctrainer-run starts programs, not Python modules")
    ("run-path", po::bool_switch(), "refused: ctrainer-run starts programs, not Python files")
    ("config-file", po::value<std::string>(),
     "an accelerate config file (YAML or JSON, as `accelerate config` writes it): its process "
     "layout fills the flags not given; values ctrainer-run cannot carry out are refused by key");
  // clang-format on
  return desc;
}

int64_t parse_positive(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size() && value >= 1) return value;
  } catch (const std::exception&) {
  }
  throw ArgumentError("--" + flag + " must be a positive integer (got '" + text + "')");
}

int64_t count_gpus() {
  // CUDA_VISIBLE_DEVICES limits what the workers can see; otherwise count the driver's GPUs.
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    const std::string list = visible;
    if (list.empty()) return 0;
    return static_cast<int64_t>(std::count(list.begin(), list.end(), ',')) + 1;
  }
  std::error_code ignored;
  int64_t count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ignored)) {
    (void)entry;
    ++count;
  }
  return count;
}

int64_t parse_nproc_per_node(const std::string& text) {
  const int64_t cpus = std::max<int64_t>(1, std::thread::hardware_concurrency());
  if (text == "cpu") return cpus;
  if (text == "gpu") {
    const int64_t gpus = count_gpus();
    if (gpus == 0)
      throw ArgumentError("--nproc-per-node gpu: no GPU is visible; use a number or cpu");
    return gpus;
  }
  if (text == "auto") {
    const int64_t gpus = count_gpus();
    return gpus > 0 ? gpus : cpus;
  }
  return parse_positive("nproc-per-node", text);
}

/// --nnodes N or MIN:MAX into options.min_nodes / max_nodes / nnodes (= MAX).
void parse_nnodes(const std::string& text, const std::string& backend, LaunchOptions& options) {
  const auto colon = text.find(':');
  options.min_nodes = parse_positive("nnodes", text.substr(0, colon));
  options.max_nodes = colon == std::string::npos ? options.min_nodes
                                                 : parse_positive("nnodes", text.substr(colon + 1));
  if (options.min_nodes > options.max_nodes)
    throw ArgumentError("--nnodes " + text + ": MIN is larger than MAX; use MIN:MAX, e.g. 1:" +
                        std::to_string(options.min_nodes));
  if (options.min_nodes != options.max_nodes && backend != "c10d")
    throw ArgumentError("--nnodes " + text +
                        ": an elastic range needs the dynamic rendezvous; add --rdzv-backend "
                        "c10d --rdzv-endpoint <host:port> --rdzv-id <job id>, or give a fixed "
                        "count, e.g. --nnodes " +
                        std::to_string(options.max_nodes));
  options.nnodes = options.max_nodes;
}

/// seconds > 0 from --rdzv-conf's `key`.
double parse_seconds(const std::string& key, const std::string& text) {
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && value > 0 && value < 1e9) return value;
  } catch (const std::exception&) {
  }
  throw ArgumentError("--rdzv-conf " + key + "=" + text + ": must be a number of seconds > 0");
}

/// torchrun's --rdzv-conf key=value,... for the c10d backend.
void parse_rdzv_conf(const std::string& text, LaunchOptions& options) {
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    const auto equals = item.find('=');
    if (equals == std::string::npos)
      throw ArgumentError("--rdzv-conf '" + text + "': '" + item + "' is not key=value");
    const std::string key = item.substr(0, equals), value = item.substr(equals + 1);
    if (key == "is_host") {
      if (value == "1" || value == "true" || value == "True") {
        options.rdzv_is_host = true;
      } else if (value == "0" || value == "false" || value == "False") {
        options.rdzv_is_host = false;
      } else {
        throw ArgumentError("--rdzv-conf is_host=" + value + ": use 1 or 0");
      }
    } else if (key == "last_call_timeout") {
      options.rdzv_last_call_timeout_s = parse_seconds(key, value);
    } else if (key == "join_timeout") {
      options.rdzv_join_timeout_s = parse_seconds(key, value);
    } else if (key == "keep_alive_interval" || key == "keep_alive_max_attempt") {
      throw ArgumentError("--rdzv-conf " + key +
                          ": ctrainer-run's agents keep no heartbeats (a lost node shows as its "
                          "peers' failed collectives, which restart the job); drop it");
    } else {
      throw ArgumentError("--rdzv-conf " + key +
                          ": unknown key; ctrainer-run's c10d rendezvous reads is_host, "
                          "last_call_timeout and join_timeout");
    }
  }
}

/// "host", "host:port" or "[v6]:port".
void parse_endpoint(const std::string& text, std::string& host, int& port) {
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos)
      throw ArgumentError("--rdzv-endpoint '" + text + "': missing ']' after the IPv6 address");
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':')
        throw ArgumentError("--rdzv-endpoint '" + text + "': expected [host]:port");
      port_text = text.substr(close + 2);
    }
  } else {
    const auto colon = text.rfind(':');
    host = text.substr(0, colon);
    if (colon != std::string::npos) port_text = text.substr(colon + 1);
  }
  if (host.empty())
    throw ArgumentError("--rdzv-endpoint '" + text + "': the host is empty; use host:port");
  if (!port_text.empty()) {
    const int64_t value = parse_positive("rdzv-endpoint port", port_text);
    if (value > 65535)
      throw ArgumentError("--rdzv-endpoint '" + text + "': the port must be in [1, 65535]");
    port = static_cast<int>(value);
  }
}

/// The c10d rendezvous' flags, checked against the ones it replaces.
void apply_dynamic_rendezvous(const po::variables_map& vm, LaunchOptions& options) {
  if (!vm.count("rdzv-endpoint"))
    throw ArgumentError(
        "--rdzv-backend c10d needs --rdzv-endpoint <host:port>: the rendezvous "
        "store every node of the job reaches");
  if (!vm["node-rank"].defaulted())
    throw ArgumentError(
        "--node-rank with --rdzv-backend c10d: node ranks come from the "
        "rendezvous (in the order the nodes join); drop --node-rank");
  if (options.standalone)
    throw ArgumentError(
        "--standalone runs one node on a static rendezvous; drop it or "
        "--rdzv-backend c10d");
  if (vm.count("config-file"))
    throw NotSupportedYet("config_file with --rdzv-backend c10d",
                          "an accelerate config file describes a static layout; give the "
                          "layout as flags");
  if (!vm.count("rdzv-id"))
    throw ArgumentError(
        "--rdzv-backend c10d needs --rdzv-id <job id>, the same on every node "
        "(it names the job in the rendezvous store)");
  options.master_port = 29400;  // torchrun's port for a c10d endpoint without one
  parse_endpoint(vm["rdzv-endpoint"].as<std::string>(), options.master_addr, options.master_port);
  if (vm.count("rdzv-conf")) parse_rdzv_conf(vm["rdzv-conf"].as<std::string>(), options);
  if (vm.count("local-addr")) options.local_addr = vm["local-addr"].as<std::string>();
}

std::set<int64_t> parse_rank_filter(const std::string& text, int64_t nproc) {
  std::set<int64_t> ranks;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    int64_t rank = -1;
    try {
      size_t used = 0;
      rank = std::stoll(item, &used);
      if (used != item.size()) rank = -1;
    } catch (const std::exception&) {
    }
    if (rank < 0 || rank >= nproc)
      throw ArgumentError("--local-ranks-filter '" + text + "': '" + item +
                          "' is not a local rank in 0.." + std::to_string(nproc - 1));
    ranks.insert(rank);
  }
  if (ranks.empty())
    throw ArgumentError("--local-ranks-filter is empty; give local ranks such as 0 or 0,1");
  return ranks;
}

/// torchrun accepts --nproc_per_node as well as --nproc-per-node: use the dash spelling.
std::string normalize_flag(const std::string& argument) {
  if (argument.rfind("--", 0) != 0) return argument;
  const auto equals = argument.find('=');
  std::string name = argument.substr(0, equals);
  std::replace(name.begin() + 2, name.end(), '_', '-');
  return equals == std::string::npos ? name : name + argument.substr(equals);
}

bool takes_value(const po::options_description& desc, const std::string& argument) {
  if (argument.find('=') != std::string::npos) return false;
  const bool is_long = argument.rfind("--", 0) == 0;
  const std::string name = argument.substr(is_long ? 2 : 1);
  if (!is_long && name.size() != 1) return false;  // -r3: value attached
  // Boost matches short options by their dashed spelling ("-r").
  const po::option_description* option =
      desc.find_nothrow(is_long ? name : "-" + name, false, false, false);
  return option != nullptr && option->semantic()->max_tokens() > 0;
}

/// On SageMaker, the flags a user leaves out take the cluster's values, as the training
/// toolkit's own torchrun launch does: --nnodes (the hosts), --node-rank (this host's index),
/// --master-addr (the first host), --nproc-per-node (SM_NUM_GPUS, when the host has GPUs).
void apply_sagemaker_defaults(const po::variables_map& vm, const EnvironmentLookup& environment,
                              LaunchOptions& options) {
  const auto cluster = read_sagemaker_cluster(environment);
  if (!cluster) return;
  if (vm["nnodes"].defaulted()) options.nnodes = static_cast<int64_t>(cluster->hosts.size());
  if (vm["node-rank"].defaulted()) options.node_rank = cluster->node_rank;
  if (vm["master-addr"].defaulted() && !vm.count("rdzv-endpoint"))
    options.master_addr = cluster->master_addr();
  if (vm["nproc-per-node"].defaulted() && cluster->num_gpus.value_or(0) > 0)
    options.nproc_per_node = *cluster->num_gpus;
}

/// --config_file: the accelerate config's layout for the flags not given, as accelerate launch
/// fills its own flags from the file (accelerate's prepare_multi_gpu_env maps num_processes /
/// num_machines to torchrun's --nproc-per-node, main_process_* to its rendezvous).
void apply_accelerate_config(const po::variables_map& vm, const AccelerateConfig& config,
                             LaunchOptions& options) {
  const std::string& file = config.source;
  if (config.num_machines && vm["nnodes"].defaulted()) options.nnodes = *config.num_machines;
  if (config.machine_rank && vm["node-rank"].defaulted()) options.node_rank = *config.machine_rank;
  const bool endpoint_given = vm.count("rdzv-endpoint") > 0;
  if (config.main_process_ip && vm["master-addr"].defaulted() && !endpoint_given)
    options.master_addr = *config.main_process_ip;
  if (config.main_process_port && vm["master-port"].defaulted() && !endpoint_given) {
    if (*config.main_process_port == 0) {
      if (options.nnodes > 1)
        throw ArgumentError(file +
                            ": main_process_port 0 picks a free port on one machine; give "
                            "the port every machine of the " +
                            std::to_string(options.nnodes) + " connects to");
      options.standalone = true;  // accelerate's port 0: a free port, found when the job starts
    } else {
      options.master_port = *config.main_process_port;
    }
  }
  if (vm["nproc-per-node"].defaulted()) {
    if (!config.num_processes)
      throw ArgumentError(file +
                          ": no num_processes (or -1); write the processes of all machines "
                          "there, or pass --nproc-per-node");
    if (*config.num_processes % options.nnodes != 0)
      throw ArgumentError(file + ": num_processes " + std::to_string(*config.num_processes) +
                          " is not a multiple of the " + std::to_string(options.nnodes) +
                          " machines (num_machines or --nnodes); each machine starts "
                          "num_processes / num_machines");
    options.nproc_per_node = *config.num_processes / options.nnodes;
  }
  if (options.nnodes > 1 && vm["master-addr"].defaulted() && !endpoint_given &&
      !config.main_process_ip)
    throw ArgumentError(file + ": " + std::to_string(options.nnodes) +
                        " machines need main_process_ip (the address of machine_rank 0), or "
                        "--master-addr");
  options.extra_environment = config.worker_environment();
}

}  // namespace

std::optional<std::string> launcher_environment(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

unsigned LaunchOptions::file_streams(int64_t local_rank) const {
  const auto at = [&](const std::vector<unsigned>& per_rank) {
    return local_rank < static_cast<int64_t>(per_rank.size())
               ? per_rank[static_cast<size_t>(local_rank)]
               : 0u;
  };
  return at(redirects) | at(tee);
}

bool LaunchOptions::shown_on_console(int64_t local_rank) const {
  return !local_ranks_filter || local_ranks_filter->count(local_rank) > 0;
}

std::vector<unsigned> parse_std_streams(const std::string& flag, const std::string& value,
                                        int64_t nproc_per_node) {
  const auto bad = [&](const std::string& why) {
    return ArgumentError("--" + flag + " '" + value + "': " + why +
                         "; use 0 (none), 1 (stdout), 2 (stderr), 3 (both), or per local rank "
                         "like 0:3,1:2");
  };
  const auto parse_mask = [&](const std::string& text) {
    if (text.size() != 1 || text[0] < '0' || text[0] > '3') throw bad("'" + text + "' is not 0-3");
    return static_cast<unsigned>(text[0] - '0');
  };
  std::vector<unsigned> masks(static_cast<size_t>(nproc_per_node), 0u);
  if (value.find(':') == std::string::npos) {
    std::fill(masks.begin(), masks.end(), parse_mask(value));
    return masks;
  }
  std::stringstream list(value);
  for (std::string item; std::getline(list, item, ',');) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) throw bad("'" + item + "' is not <local rank>:<streams>");
    int64_t rank = -1;
    try {
      size_t used = 0;
      rank = std::stoll(item.substr(0, colon), &used);
      if (used != colon) rank = -1;
    } catch (const std::exception&) {
    }
    if (rank < 0 || rank >= nproc_per_node)
      throw bad("local rank '" + item.substr(0, colon) + "' is not in 0.." +
                std::to_string(nproc_per_node - 1));
    masks[static_cast<size_t>(rank)] = parse_mask(item.substr(colon + 1));
  }
  return masks;
}

ParsedCommandLine parse_launch_command_line(const std::vector<std::string>& arguments,
                                            const EnvironmentLookup& environment) {
  const po::options_description desc = describe_options();

  // Launcher flags end at the first argument that is not a flag or a flag's value.
  std::vector<std::string> launcher_arguments;
  std::vector<std::string> command;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const std::string& argument = arguments[i];
    if (argument == "--") {
      command.assign(arguments.begin() + static_cast<std::ptrdiff_t>(i) + 1, arguments.end());
      break;
    }
    if (argument.size() < 2 || argument[0] != '-') {
      command.assign(arguments.begin() + static_cast<std::ptrdiff_t>(i), arguments.end());
      break;
    }
    launcher_arguments.push_back(normalize_flag(argument));
    if (takes_value(desc, launcher_arguments.back()) && i + 1 < arguments.size())
      launcher_arguments.push_back(arguments[++i]);
  }

  po::variables_map vm;
  try {
    po::store(
        po::command_line_parser(launcher_arguments)
            .options(desc)
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run(),
        vm);
    po::notify(vm);
  } catch (const po::error& error) {
    // Boost fills %placeholders% into its message from the tokens; a token that holds one
    // (found by the launch_command_line fuzz target) makes that loop forever. Name it ourselves.
    for (const std::string& argument : launcher_arguments)
      if (argument.find('%') != std::string::npos)
        throw ArgumentError("'" + argument +
                            "' is not an option of ctrainer-run (see ctrainer-run --help)");
    throw ArgumentError(std::string(error.what()) + " (see ctrainer-run --help)");
  }

  ParsedCommandLine parsed;
  if (vm.count("help")) {
    std::ostringstream text;
    text << kUsage << "\n\n" << desc;
    parsed.help = text.str();
    return parsed;
  }
  if (vm["module"].as<bool>())
    throw ArgumentError(
        "-m/--module runs a Python module under torchrun; ctrainer-run starts "
        "programs: give the program's path instead");
  if (vm["run-path"].as<bool>())
    throw ArgumentError(
        "--run-path runs a Python file under torchrun; ctrainer-run starts "
        "programs: give the program's path instead");
  const std::string backend = vm["rdzv-backend"].as<std::string>();
  if (backend != "static" && backend != "c10d")
    throw NotSupportedYet("rdzv-backend " + backend,
                          "rendezvous backends other than static and c10d; use c10d (a TCPStore "
                          "at --rdzv-endpoint) for an elastic job");
  if (backend == "static") {
    if (vm.count("rdzv-conf"))
      throw ArgumentError(
          "--rdzv-conf is read by the c10d rendezvous; add --rdzv-backend c10d "
          "or drop it");
    if (vm.count("local-addr"))
      throw ArgumentError(
          "--local-addr is read by the c10d rendezvous; the static one takes "
          "rank 0's address from --master-addr");
  }
  if (vm.count("start-method")) {
    const std::string method = vm["start-method"].as<std::string>();
    if (method != "spawn" && method != "fork" && method != "forkserver")
      throw ArgumentError("--start-method must be spawn, fork or forkserver (got '" + method +
                          "')");
  }
  if (command.empty())
    throw ArgumentError("no program given; usage: ctrainer-run [options] program [args...]");

  LaunchOptions options;
  options.command = std::move(command);
  options.rdzv_backend = backend;
  parse_nnodes(vm["nnodes"].as<std::string>(), backend, options);
  options.nproc_per_node = parse_nproc_per_node(vm["nproc-per-node"].as<std::string>());
  options.node_rank = vm["node-rank"].as<int64_t>();
  options.standalone = vm["standalone"].as<bool>();
  options.master_addr = vm["master-addr"].as<std::string>();
  if (!options.elastic() && !options.standalone) apply_sagemaker_defaults(vm, environment, options);
  options.master_port = vm["master-port"].as<int>();
  if (options.master_port < 1 || options.master_port > 65535)
    throw ArgumentError("--master-port must be in [1, 65535] (got " +
                        std::to_string(options.master_port) + ")");
  if (options.elastic())
    apply_dynamic_rendezvous(vm, options);
  else if (vm.count("rdzv-endpoint"))
    parse_endpoint(vm["rdzv-endpoint"].as<std::string>(), options.master_addr, options.master_port);
  if (vm.count("config-file"))
    apply_accelerate_config(vm, read_accelerate_config(vm["config-file"].as<std::string>()),
                            options);
  if (options.standalone) {
    if (options.nnodes != 1)
      throw ArgumentError("--standalone runs on one node; drop --nnodes " +
                          std::to_string(options.nnodes) + " or --standalone");
    options.master_addr = "127.0.0.1";
    options.master_port = 0;  // picked when the job starts
  }
  // A static layout's node count may come from SageMaker or the accelerate config.
  if (!options.elastic()) options.min_nodes = options.max_nodes = options.nnodes;
  if (options.node_rank < 0 || options.node_rank >= options.nnodes)
    throw ArgumentError("--node-rank " + std::to_string(options.node_rank) +
                        " is not in 0..--nnodes-1 (" + std::to_string(options.nnodes - 1) + ")");
  options.max_restarts = vm["max-restarts"].as<int64_t>();
  if (options.max_restarts < 0)
    throw ArgumentError("--max-restarts must be >= 0 (got " + std::to_string(options.max_restarts) +
                        ")");
  if (vm.count("rdzv-id")) options.run_id = vm["rdzv-id"].as<std::string>();
  options.role = vm["role"].as<std::string>();
  options.monitor_interval_s = vm["monitor-interval"].as<double>();
  if (!(options.monitor_interval_s > 0))
    throw ArgumentError("--monitor-interval must be > 0 seconds");
  options.grace_period_s = vm["grace-period"].as<double>();
  if (!(options.grace_period_s >= 0)) throw ArgumentError("--grace-period must be >= 0 seconds");
  options.redirects =
      parse_std_streams("redirects", vm["redirects"].as<std::string>(), options.nproc_per_node);
  options.tee = parse_std_streams("tee", vm["tee"].as<std::string>(), options.nproc_per_node);
  if (vm.count("log-dir")) options.log_dir = vm["log-dir"].as<std::string>();
  if (vm.count("local-ranks-filter"))
    options.local_ranks_filter =
        parse_rank_filter(vm["local-ranks-filter"].as<std::string>(), options.nproc_per_node);
  parsed.options = std::move(options);
  return parsed;
}

}  // namespace ctrainer::launcher
