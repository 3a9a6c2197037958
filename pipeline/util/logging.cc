#include "util/logging.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "util/strings.h"

namespace wattcal {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_log_mutex;

void Emit(const char* prefix, const std::string& message) {
  // Control bytes other than a line feed (bytes read from an input file, quoted in a message) are
  // written as \xNN, so that they cannot reach a terminal as escape sequences.
  const std::string text = EscapeControlBytes(message, LineBreaks::kKeep);
  std::lock_guard<std::mutex> lock(g_log_mutex);
  std::fprintf(stderr, "%s%s\n", prefix, text.c_str());
  std::fflush(stderr);
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void LogInfo(const std::string& m) {
  if (g_level >= static_cast<int>(LogLevel::kInfo)) Emit("", m);
}
void LogWarning(const std::string& m) {
  if (g_level >= static_cast<int>(LogLevel::kWarning)) Emit("warning: ", m);
}
void LogError(const std::string& m) { Emit("error: ", m); }
void LogDebug(const std::string& m) {
  if (g_level >= static_cast<int>(LogLevel::kDebug)) Emit("debug: ", m);
}

bool StderrIsTerminal() { return isatty(fileno(stderr)) != 0; }

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(total > 0 && StderrIsTerminal() && g_level >= static_cast<int>(LogLevel::kInfo)) {
  Draw();
}

Progress::~Progress() { Finish(); }

void Progress::Tick(int64_t n) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  done_ += n;
  Draw();
}

void Progress::Finish() {
  if (finished_) return;
  finished_ = true;
  if (enabled_) {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    std::fprintf(stderr, "\n");
  }
}

void Progress::Draw() {
  if (!enabled_ || total_ <= 0) return;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * std::min(done_, total_) / total_);
  std::fprintf(stderr, "\r%s [%.*s%*s] %lld/%lld", label_.c_str(), filled,
               "##############################", kWidth - filled, "", static_cast<long long>(done_),
               static_cast<long long>(total_));
  std::fflush(stderr);
}

}  // namespace wattcal
