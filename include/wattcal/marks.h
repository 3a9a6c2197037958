// wattcal marks for C and C++ programs (header-only, C++11): mark the windows of a program's
// run that `wattcal-capture --app NAME -- ./program` should measure, so that start-up, data
// loading and warm-up are left out.
//
//   #include <cuda_runtime.h>         // optional: then each mark waits for the GPU first
//   #include "wattcal/marks.h"        // add -I<wattcal>/include
//
//   {
//     wattcal::marks::Window w("steady");   // begin steady ... end steady, at scope exit
//     for (int step = 0; step < steps; ++step) run_one_step();
//     w.set_steps(steps);                   // optional: the steps the window ran
//   }
//
// or wattcal::marks::Begin("steady"); ...; wattcal::marks::EndWithSteps("steady", steps);
// (wattcal::marks::End("steady") without a step count). Mark ONE window around the loop, a
// second or more of it, not one window per step: the power meter reads every ~100 ms, and a
// window of one step holds too few readings to measure (flagged too_few_samples). With the
// steps, wattcal-predict --capture gives the energy per step.
//
// What it does. When the environment has WATTCAL_MARKS=FILE (wattcal-capture sets it for the
// program it runs), each mark appends one line to FILE with one write(2) in append mode:
//   begin NAME NANOSECONDS      end NAME NANOSECONDS [STEPS]
// NANOSECONDS is CLOCK_REALTIME (the clock of wattcal-capture's NVML sampler). Without
// WATTCAL_MARKS nothing is written, so the program runs unchanged outside wattcal-capture.
// Windows must not nest; NAME is one word: 1 to 200 bytes without white space, control bytes,
// ',' or '"'.
//
// An invalid name fails the recording. Begin/End given one print a line on stderr, return false
// and, under wattcal-capture, write a line `invalid REASON` to the marks file instead of the
// mark: the program goes on (no exception, no abort), and wattcal-capture then refuses the
// recording with that reason and the marks file's line, leaving its --out as it was (rather
// than measuring the whole run, start-up included, as if the program had marked nothing).
//
// The GPU. Kernels run asynchronously: a window should end when its GPU work has ended. When
// <cuda_runtime.h> was included before this header, every mark first calls
// cudaDeviceSynchronize(); otherwise pass your own synchronisation as the second argument
// (any callable to Begin/End, a function or captureless lambda to Window):
//   wattcal::marks::Window w("steady", [] { hipDeviceSynchronize(); });
//
// Counters. When the NVTX v3 headers (<nvtx3/nvToolsExt.h>, in every CUDA toolkit) can be
// included, each window is also an NVTX push/pop range of the same name, so that
// `wattcal-capture --app NAME --counters` profiles only the kernels inside the windows
// (ncu --nvtx --nvtx-include NAME/). Define WATTCAL_MARKS_NO_NVTX to leave NVTX out. That
// profiled run has WATTCAL_PROFILING=1 in its environment: ncu replays every launch, so a program
// may run a few steps there instead of thousands (utilisations are ratios of summed counters).
#ifndef WATTCAL_MARKS_H_
#define WATTCAL_MARKS_H_

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#if !defined(WATTCAL_MARKS_NO_NVTX) && defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define WATTCAL_MARKS_HAVE_NVTX 1
#endif
#endif

namespace wattcal {
namespace marks {

namespace detail {

// The marks file from the environment ("" = marks are off).
inline const char* File() {
  const char* path = std::getenv("WATTCAL_MARKS");
  return path != nullptr ? path : "";
}

// Appends `line` (its newline included) to the marks file with one write(2) in append mode
// (atomic for a line this short). Returns false when the file cannot be written.
inline bool AppendLine(const char* line, size_t n) {
  const char* path = File();
  if (path[0] == '\0') return true;
  const int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool ok = ::write(fd, line, n) == static_cast<ssize_t>(n);
  ::close(fd);
  return ok;
}

// Appends "VERB NAME NS\n" (or "VERB NAME NS STEPS\n" when steps > 0), NS the wall clock now.
inline bool Append(const char* verb, const char* name, long long steps = 0) {
  if (File()[0] == '\0') return true;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const long long ns = static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
  char line[512];
  const int n = steps > 0 ? std::snprintf(line, sizeof line, "%s %s %lld %lld\n", verb, name, ns, steps)
                          : std::snprintf(line, sizeof line, "%s %s %lld\n", verb, name, ns);
  if (n <= 0 || n >= static_cast<int>(sizeof line)) return false;
  return AppendLine(line, static_cast<size_t>(n));
}

inline void SyncGpu() {
#if defined(__CUDA_RUNTIME_H__)
  cudaDeviceSynchronize();
#endif
}

// A name is one word: 1 to 200 bytes, none of them white space, a control byte, ',' or '"'
// (wattcal-capture's marks reader and windows.csv keep the same rule).
inline bool ValidName(const char* name) {
  if (name == nullptr || name[0] == '\0' || std::strlen(name) > 200) return false;
  for (const char* c = name; *c != '\0'; ++c) {
    const unsigned char u = static_cast<unsigned char>(*c);
    if (u <= ' ' || u == 0x7f || u == ',' || u == '"') return false;
  }
  return true;
}

inline void Report(const char* what, const char* name) {
  std::fprintf(stderr, "wattcal marks: cannot %s window '%s' in %s (WATTCAL_MARKS)\n", what,
               name != nullptr ? name : "(null)", File());
}

// `name` for a one-line message: at most 60 bytes, each byte outside printable ASCII (and the
// quote) as \xNN.
inline std::string Printable(const char* name) {
  if (name == nullptr) return "(null)";
  std::string out;
  size_t n = 0;
  for (const char* c = name; *c != '\0' && n < 60; ++c, ++n) {
    const unsigned char u = static_cast<unsigned char>(*c);
    if (u < 0x20 || u >= 0x7f || u == '\'' || u == '\\') {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += static_cast<char>(u);
    }
  }
  if (*(name + n) != '\0') out += "...";
  return out;
}

// An invalid name: reported on stderr and, under wattcal-capture, written to the marks file as
// `invalid REASON`, which makes wattcal-capture refuse the recording with the reason.
inline bool Refuse(const char* verb, const char* name) {
  const std::string shown = Printable(name);
  std::fprintf(stderr,
               "wattcal marks: cannot %s window '%s': a name is one word (1 to 200 bytes without white "
               "space, control bytes, ',' or '\"')%s\n",
               verb, shown.c_str(), File()[0] != '\0' ? "; the recording will be refused" : "");
  const std::string line = "invalid " + std::string(verb) + ": the window name '" + shown +
                           "' is not one word (1 to 200 bytes without white space, control bytes, ',' or '\"')\n";
  AppendLine(line.data(), line.size());
  return false;
}

// A step count below 1: reported on stderr and, under wattcal-capture, written to the marks file as
// `invalid REASON`, which makes wattcal-capture refuse the recording.
inline bool RefuseSteps(const char* name, long long steps) {
  const std::string shown = Printable(name);
  std::fprintf(stderr, "wattcal marks: cannot end window '%s' with %lld steps: a step count is >= 1%s\n",
               shown.c_str(), steps, File()[0] != '\0' ? "; the recording will be refused" : "");
  const std::string line = "invalid end: the window '" + shown + "' was given " + std::to_string(steps) +
                           " steps: a step count is a whole number >= 1\n";
  AppendLine(line.data(), line.size());
  return false;
}

}  // namespace detail

// Begins the window `name` (after `sync()` has waited for the GPU). Returns false, with a
// message on stderr, when the name is not one word (which fails the recording, above) or the
// marks file cannot be written.
template <typename Sync>
inline bool Begin(const char* name, Sync sync) {
  if (!detail::ValidName(name)) return detail::Refuse("begin", name);
  sync();
#if defined(WATTCAL_MARKS_HAVE_NVTX)
  nvtxRangePushA(name);
#endif
  if (!detail::Append("begin", name)) {
    detail::Report("begin", name);
    return false;
  }
  return true;
}

namespace detail {

// Ends the window `name` (a valid name) once `sync()` has waited for the GPU; `steps` > 0 goes on
// the `end` line.
template <typename Sync>
inline bool EndMark(const char* name, long long steps, Sync sync) {
  sync();
  const bool ok = Append("end", name, steps);
#if defined(WATTCAL_MARKS_HAVE_NVTX)
  nvtxRangePop();
#endif
  if (!ok) Report("end", name);
  return ok;
}

}  // namespace detail

// Ends the window `name` once `sync()` has waited for the GPU.
template <typename Sync>
inline bool End(const char* name, Sync sync) {
  if (!detail::ValidName(name)) return detail::Refuse("end", name);
  return detail::EndMark(name, 0, sync);
}

// Ends the window `name` once `sync()` has waited for the GPU, with the steps (iterations, batches)
// the program ran inside it: a whole number >= 1 (a count below 1 is refused, as an invalid name).
template <typename Sync>
inline bool EndWithSteps(const char* name, long long steps, Sync sync) {
  if (!detail::ValidName(name)) return detail::Refuse("end", name);
  if (steps < 1) return detail::RefuseSteps(name, steps);
  return detail::EndMark(name, steps, sync);
}

inline bool Begin(const char* name) { return Begin(name, detail::SyncGpu); }
inline bool End(const char* name) { return End(name, detail::SyncGpu); }
inline bool EndWithSteps(const char* name, long long steps) {
  return EndWithSteps(name, steps, detail::SyncGpu);
}

// True when the program runs under wattcal-capture (WATTCAL_MARKS is set).
inline bool Enabled() { return detail::File()[0] != '\0'; }

// A window for the lifetime of the object (begin in the constructor, end in the destructor, with
// the steps given to set_steps, if any).
class Window {
 public:
  explicit Window(const std::string& name) : name_(name), sync_(&detail::SyncGpu) {
    Begin(name_.c_str(), sync_);
  }
  Window(const std::string& name, void (*sync)()) : name_(name), sync_(sync) { Begin(name_.c_str(), sync_); }
  ~Window() {
    if (has_steps_) {
      EndWithSteps(name_.c_str(), steps_, sync_);
    } else {
      End(name_.c_str(), sync_);
    }
  }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
  // The steps the window ran (>= 1), written on its `end` mark; may be set as the program counts.
  void set_steps(long long steps) {
    steps_ = steps;
    has_steps_ = true;
  }

 private:
  std::string name_;
  void (*sync_)();
  long long steps_ = 0;
  bool has_steps_ = false;
};

}  // namespace marks
}  // namespace wattcal

#endif  // WATTCAL_MARKS_H_
