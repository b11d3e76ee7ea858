#include <ctrainer/distributed/launcher/worker_process.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace ctrainer::launcher {
namespace {

/// Only async-signal-safe calls are allowed between fork and exec: write(2) a message.
void write_error(const char* prefix, const char* subject, int error) {
  const char* parts[] = {prefix, subject, ": ", std::strerror(error), "\n"};
  for (const char* part : parts) (void)!::write(2, part, std::strlen(part));
}

void redirect(const char* path, int target_fd, int flags) {
  const int fd = ::open(path, flags, 0644);
  if (fd < 0) {
    write_error("ctrainer-run: cannot open worker log ", path, errno);
    ::_exit(127);
  }
  ::dup2(fd, target_fd);
  ::close(fd);
}

}  // namespace

std::string WorkerExit::describe() const {
  if (signal == 0) return "exit code " + std::to_string(exit_code);
  const char* abbreviation = ::sigabbrev_np(signal);
  return "killed by signal " +
         (abbreviation != nullptr ? "SIG" + std::string(abbreviation) : std::to_string(signal));
}

std::optional<std::string> find_executable(const std::string& program) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), X_OK) == 0) return program;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream folders(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string folder; std::getline(folders, folder, ':');) {
    const std::string candidate = (folder.empty() ? "." : folder) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string why_not_executable(const std::string& program) {
  const bool has_folder = program.find('/') != std::string::npos;
  const bool exists = ::access(program.c_str(), F_OK) == 0;
  const bool python = program.size() > 3 && program.compare(program.size() - 3, 3, ".py") == 0;
  if (exists && python)
    return "it is a Python script: ctrainer-run starts programs (a C++ training binary); run "
           "Python scripts with torchrun";
  if (exists && !has_folder)
    return "a name without '/' is searched in PATH, and PATH does not hold it; to run the file "
           "in this folder, give ./" +
           program;
  if (exists) return "the file is not executable (chmod +x " + program + ")";
  return has_folder ? "no such file" : "no executable file of that name in PATH";
}

WorkerProcess::WorkerProcess(const WorkerSpec& spec)
    : rank_(spec.rank), local_rank_(spec.local_rank) {
  // Everything the child needs is prepared before fork (no allocation after it).
  std::map<std::string, std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const auto equals = text.find('=');
    if (equals != std::string::npos) merged[text.substr(0, equals)] = text.substr(equals + 1);
  }
  for (const auto& [name, value] : spec.environment) merged[name] = value;
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : merged) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& text : env_strings) envp.push_back(text.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = spec.command;
  std::vector<char*> argv;
  for (auto& text : argv_strings) argv.push_back(text.data());
  argv.push_back(nullptr);
  const pid_t launcher = ::getpid();
  constexpr int kLogFlags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;

  // Until the child has reset the launcher's signal handlers, a SIGTERM sent to it would only
  // set the launcher's flag in the child's copy and be lost: block signals across the fork.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &previous);
  pid_ = ::fork();
  if (pid_ < 0) {
    const int error = errno;
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(error));
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);  // own process group: signals reach the worker only through the launcher
    // An orphaned worker would hang its peers: stop it when the launcher dies.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != launcher) ::_exit(128 + SIGTERM);
    // Restore what the launcher changed for itself, then let pending signals in.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE})
      ::sigaction(sig, &default_action, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Workers run in a background process group: reading the terminal would stop them.
    redirect("/dev/null", 0, O_RDONLY | O_CLOEXEC);
    if (!spec.stdout_path.empty()) redirect(spec.stdout_path.c_str(), 1, kLogFlags);
    if (!spec.stderr_path.empty()) redirect(spec.stderr_path.c_str(), 2, kLogFlags);
    ::execvpe(argv[0], argv.data(), envp.data());
    write_error("ctrainer-run: cannot execute ", argv[0], errno);
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);  // also here, so signal() works before the child ran setpgid
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
}

bool WorkerProcess::poll() {
  if (exit_) return false;
  int status = 0;
  const pid_t done = ::waitpid(pid_, &status, WNOHANG);
  if (done == pid_) {
    WorkerExit outcome;
    if (WIFSIGNALED(status))
      outcome.signal = WTERMSIG(status);
    else
      outcome.exit_code = WEXITSTATUS(status);
    exit_ = outcome;
  } else if (done < 0 && errno == ECHILD) {
    exit_ = WorkerExit{};  // reaped elsewhere; nothing more to learn
  }
  return running();
}

void WorkerProcess::signal(int sig) const {
  if (exit_) return;
  if (::kill(-pid_, sig) != 0) ::kill(pid_, sig);  // group gone: the worker itself
}

}  // namespace ctrainer::launcher
