// What keeps a recording (wattcal-capture --app, and the suite's start) all or nothing:
//
//  - DirectoryLock: one recording into a capture directory at a time. flock(2) on the directory
//    itself (nothing is written into it); a second recording is refused at once, with a message,
//    instead of sharing the first one's scratch files. The lock goes when the process ends,
//    whichever way.
//  - InterruptNote: SIGINT, SIGTERM and SIGHUP are noted instead of ending the process, so that
//    the recording stops at the next check (Check(), SleepMs(), after the command it runs) and
//    its scratch files are removed: the directory is left as it was. A signal another process
//    sent to wattcal-capture alone (kill) is passed on to the command it runs (set through
//    RunningChild); one from the terminal reaches that command already. A signal ignored when the
//    recording starts (nohup) stays ignored.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <stdexcept>
#include <string>

namespace wattcal::capture {

class DirectoryLock {
 public:
  DirectoryLock() = default;
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  // Locks the existing directory `dir`. False, with `error` naming it, when another process
  // holds its lock (or it cannot be opened).
  bool Acquire(const std::string& dir, std::string* error);

 private:
  int fd_ = -1;
};

// Thrown when a noted signal stops the recording.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

class InterruptNote {
 public:
  // Notes SIGINT, SIGTERM and SIGHUP from now on (one InterruptNote at a time).
  InterruptNote();
  // Restores what was there before.
  ~InterruptNote();
  InterruptNote(const InterruptNote&) = delete;
  InterruptNote& operator=(const InterruptNote&) = delete;

  // The signal noted so far (0 = none).
  static int Noted();
  // Throws Interrupted when a signal was noted.
  static void Check();
  // Sleeps `ms`, in short steps; throws Interrupted as soon as a signal is noted.
  static void SleepMs(double ms);
  // The process a signal sent to this one alone is passed on to (0 = none). Passes on one
  // noted before the call.
  static void RunningChild(pid_t pid);

 private:
  struct sigaction old_[3];
};

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread while it lives (a commit that must not
// stop half way); they are delivered, and noted, when it ends.
class SignalsHeld {
 public:
  SignalsHeld();
  ~SignalsHeld();
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t old_;
};

}  // namespace wattcal::capture
