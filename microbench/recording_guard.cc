#include "recording_guard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace wattcal::capture {

namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

std::atomic<int> g_noted{0};
std::atomic<pid_t> g_child{0};

extern "C" void NoteSignal(int sig, siginfo_t* info, void*) {
  g_noted = sig;
  // Sent by a process to wattcal-capture alone (kill): the command it runs is told too. One from
  // the terminal (SI_KERNEL) went to the whole foreground process group already.
  const pid_t child = g_child;
  if (child > 0 && info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE))
    kill(child, sig);
}

}  // namespace

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) close(fd_);  // releases the lock
}

bool DirectoryLock::Acquire(const std::string& dir, std::string* error) {
  fd_ = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) {
    *error = fmt::format("--out {}: cannot open the directory: {}", dir, std::strerror(errno));
    return false;
  }
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    close(fd_);
    fd_ = -1;
    *error = e == EWOULDBLOCK
                 ? fmt::format(
                       "--out {}: another wattcal-capture is recording into this directory "
                       "now: wait until it ends, or give another --out",
                       dir)
                 : fmt::format("--out {}: cannot lock the directory: {}", dir, std::strerror(e));
    return false;
  }
  return true;
}

Interrupted::Interrupted(int signal)
    : std::runtime_error(fmt::format("interrupted ({})", strsignal(signal))), signal_(signal) {}

InterruptNote::InterruptNote() {
  g_noted = 0;
  g_child = 0;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = NoteSignal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; ++i) {
    sigaction(kSignals[i], nullptr, &old_[i]);
    if (old_[i].sa_handler == SIG_IGN) continue;  // nohup: stays ignored
    sigaction(kSignals[i], &sa, nullptr);
  }
}

InterruptNote::~InterruptNote() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  g_child = 0;
}

int InterruptNote::Noted() { return g_noted; }

void InterruptNote::Check() {
  const int sig = g_noted;
  if (sig != 0) throw Interrupted(sig);
}

void InterruptNote::SleepMs(double ms) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double, std::milli>(std::max(0.0, ms)));
  for (;;) {
    Check();
    const Clock::time_point now = Clock::now();
    if (now >= end) return;
    const Clock::duration step = std::chrono::milliseconds(20);
    std::this_thread::sleep_for(std::min(end - now, step));
  }
}

void InterruptNote::RunningChild(pid_t pid) {
  g_child = pid;
  const int sig = g_noted;
  if (pid > 0 && sig != 0) kill(pid, sig);
}

SignalsHeld::SignalsHeld() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kSignals) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, &old_);
}

SignalsHeld::~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

}  // namespace wattcal::capture
