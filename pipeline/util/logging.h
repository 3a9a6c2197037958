// The one logging header (STYLE.md house rule 7): messages go to stderr, data only to files.
#pragma once

#include <cstdint>
#include <string>

namespace wattcal {

enum class LogLevel { kQuiet = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

// Process-wide verbosity; stages set it from --quiet / --verbose.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

void LogInfo(const std::string& message);
void LogWarning(const std::string& message);
void LogError(const std::string& message);
void LogDebug(const std::string& message);

// True when stderr is a terminal: progress bars are drawn only then.
bool StderrIsTerminal();

// A progress line for long work. Draws "\r<label> [####    ] k/n" on a terminal,
// and nothing at all when stderr is not a TTY. Thread-safe Tick().
class Progress {
 public:
  Progress(std::string label, int64_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Tick(int64_t n = 1);
  void Finish();

 private:
  void Draw();

  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  bool enabled_;
  bool finished_ = false;
};

}  // namespace wattcal
