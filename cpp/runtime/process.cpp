// posix_spawnp with captured output. See process.hpp.
#include "runtime/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace raptor::runtime {
namespace {

// Closes a file descriptor on scope exit.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct SpawnActions {
  posix_spawn_file_actions_t a;
  SpawnActions() { posix_spawn_file_actions_init(&a); }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&a); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
};

}  // namespace

std::vector<std::string> split_flags(const std::string& flags) {
  std::vector<std::string> out;
  std::istringstream in(flags);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& what_to_do) {
  if (argv.empty()) throw std::logic_error("run_process: empty argv");
  int out_pipe[2];
  int err_pipe[2];
  // O_CLOEXEC: children spawned concurrently by other threads must not inherit these ends.
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("raptor: pipe2 failed");
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("raptor: pipe2 failed");
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);

  SpawnActions actions;
  posix_spawn_file_actions_addopen(&actions.a, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions.a, out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&actions.a, err_w.fd, 2);

  std::vector<std::string> env_store;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "LC_ALL=", 7) != 0) env_store.emplace_back(*e);
  }
  env_store.emplace_back("LC_ALL=C");
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args_store(argv);
  std::vector<char*> args;
  for (auto& s : args_store) args.push_back(s.data());
  args.push_back(nullptr);

  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions.a, nullptr, args.data(), envp.data());
  if (rc != 0) {
    throw std::runtime_error("raptor: cannot run '" + argv[0] + "': " + std::strerror(rc) + ". " +
                             what_to_do);
  }
  out_w.reset();
  err_w.reset();

  ProcessResult result;
  pollfd fds[2] = {{out_r.fd, POLLIN, 0}, {err_r.fd, POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  char buf[65536];
  while (open_count > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        fds[i].fd = -1;  // closed by the Fd guards
        --open_count;
      }
    }
  }
  int status = 0;
  pid_t w;
  do {
    w = ::waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  if (w < 0) {
    // ECHILD: the host process ignores SIGCHLD, so the status is lost; judge by the output.
    result.exit_status = result.err.find("error") == std::string::npos ? 0 : 1;
  } else if (WIFEXITED(status)) {
    result.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_status = 128 + WTERMSIG(status);
  }
  return result;
}

}  // namespace raptor::runtime
