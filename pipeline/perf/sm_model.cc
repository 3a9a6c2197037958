#include "perf/sm_model.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <queue>
#include <stdexcept>

#include <fmt/format.h>

namespace wattcal {

bool SmConfig::Check(std::string* error) const {
  auto fail = [error](const std::string& m) {
    *error = m;
    return false;
  };
  if (issue_width < 1 || issue_width > 8) {
    return fail(fmt::format("issue_width = {} must lie in [1, 8]", issue_width));
  }
  if (alu_latency_cycles < 1) {
    return fail(fmt::format("alu_latency_cycles = {} must be >= 1", alu_latency_cycles));
  }
  if (!(std::isfinite(mem_latency_ns) && mem_latency_ns > 0.0)) {
    return fail(fmt::format("mem_latency_ns = {} must be > 0", mem_latency_ns));
  }
  if (!(std::isfinite(mem_latency_jitter_ns) && mem_latency_jitter_ns >= 0.0)) {
    return fail(fmt::format("mem_latency_jitter_ns = {} must be >= 0", mem_latency_jitter_ns));
  }
  if (!(std::isfinite(load_service_ns) && load_service_ns >= 0.0 &&
        load_service_ns <= mem_latency_ns)) {
    return fail(fmt::format("load_service_ns = {} must lie in [0, mem_latency_ns = {}]",
                            load_service_ns, mem_latency_ns));
  }
  if (!(std::isfinite(store_service_ns) && store_service_ns > 0.0)) {
    return fail(fmt::format("store_service_ns = {} must be > 0", store_service_ns));
  }
  if (mshr_entries < 1) return fail(fmt::format("mshr_entries = {} must be >= 1", mshr_entries));
  if (store_queue_entries < 1) {
    return fail(fmt::format("store_queue_entries = {} must be >= 1", store_queue_entries));
  }
  return true;
}

std::string SmKernel::Problem() const {
  if (warps < 1) return fmt::format("warps = {} must be >= 1", warps);
  if (iterations < 1) return fmt::format("iterations = {} must be >= 1", iterations);
  if (body.empty()) return "the loop body is empty";
  const int n = static_cast<int>(body.size());
  for (int i = 0; i < n; ++i) {
    for (int d : body[i].deps) {
      if (d < 0 || d >= i) {
        return fmt::format(
            "instruction {} depends on instruction {} of the same iteration, "
            "which does not precede it",
            i, d);
      }
    }
    for (int d : body[i].carried_deps) {
      if (d < 0 || d >= n) {
        return fmt::format(
            "instruction {} depends on instruction {} of the previous iteration, "
            "outside the body of {} instructions",
            i, d, n);
      }
    }
    const double latency = body[i].latency_ns;
    if (body[i].kind == SmOpKind::kLoad &&
        !(latency < 0.0 || (std::isfinite(latency) && latency > 0.0))) {
      return fmt::format(
          "instruction {} has latency_ns = {}; give a latency > 0 (or < 0 for the "
          "default)",
          i, latency);
    }
  }
  return "";
}

namespace {

constexpr int64_t kNever = INT64_MAX;
constexpr double kFsPerNs = 1e6;

// splitmix64: a well-mixed 64-bit hash, the same on every platform.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from (seed, warp, iteration, instruction).
double Draw(uint64_t seed, int warp, int iteration, int op) {
  uint64_t h = Mix(seed);
  h = Mix(h ^ static_cast<uint64_t>(warp));
  h = Mix(h ^ static_cast<uint64_t>(iteration));
  h = Mix(h ^ static_cast<uint64_t>(op));
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

struct WarpState {
  int iteration = 0;
  int pc = 0;
  bool finished = false;            // has issued every instruction
  int64_t last_load_ready = 0;      // when its last outstanding load returns, fs
  std::vector<int64_t> ready;       // per instruction of this iteration: result time, fs
  std::vector<int64_t> prev_ready;  // the same for the previous iteration
  std::vector<bool> ready_is_load, prev_ready_is_load;
};

enum class Block { kNone, kLoadResult, kAluResult, kQueueFull, kLsuPort };

// What one cycle's scan of the warps found: how many instructions issued, the hazards of the
// warps that waited (kFlag*), and the earliest time one of them may proceed.
struct CycleScan {
  int issued = 0;
  uint32_t flags = 0;
  int64_t wake = kNever;
};

// One SimulateSm run: the warps, the memory side (loads in flight, the store queue, the one
// channel both use) and the run with its timeline, advanced cycle by cycle.
class SmSimulation {
 public:
  SmSimulation(const SmConfig& config, const SmKernel& kernel, double f_mhz, bool record_timeline)
      : config_(config),
        kernel_(kernel),
        record_(record_timeline),
        period_(std::llround(1e9 / f_mhz)),  // fs per core cycle
        load_service_(std::llround(config.load_service_ns * kFsPerNs)),
        store_service_(std::llround(config.store_service_ns * kFsPerNs)),
        n_ops_(static_cast<int>(kernel.body.size())),
        n_warps_(kernel.warps),
        warps_(static_cast<size_t>(kernel.warps)) {
    for (WarpState& w : warps_) {
      w.ready.assign(n_ops_, 0);
      w.prev_ready.assign(n_ops_, 0);
      w.ready_is_load.assign(n_ops_, false);
      w.prev_ready_is_load.assign(n_ops_, false);
    }
    run_.f_mhz = f_mhz;
    Timeline& tl = run_.timeline;
    tl.kernel = kernel.name;
    tl.base_mhz = f_mhz;
    tl.issue_width = config.issue_width;
  }

  // Runs the kernel to its end: every warp past its last iteration and every load returned.
  SmRun Run() {
    int64_t k = 0;
    while (true) {
      const int64_t t = k * period_;
      while (!loads_out_.empty() && loads_out_.top() <= t) loads_out_.pop();
      while (!store_queue_.empty() && store_queue_.front() <= t) store_queue_.pop_front();
      if (finished_warps_ == n_warps_ && loads_out_.empty()) break;
      const CycleScan scan = IssueCycle(k, t);
      if (scan.issued > 0) {
        // A full-issue cycle was not scanned to the end: its hazards are unknown and unneeded.
        if (record_) {
          run_.timeline.AppendCycles(1, scan.issued,
                                     scan.issued == config_.issue_width ? 0u : scan.flags);
        }
        ++k;
        continue;
      }
      k = SkipIdleCycles(k, scan);
    }
    Finish(k);
    return std::move(run_);
  }

 private:
  // Cycle k (time t, fs): the warps in round-robin order from the one after the last issuer,
  // each issuing its next instruction unless a hazard blocks it, up to issue_width.
  CycleScan IssueCycle(int64_t k, int64_t t) {
    CycleScan scan;
    bool lsu_used = false;
    int last_issuer = -1;
    for (int i = 0; i < n_warps_ && scan.issued < config_.issue_width; ++i) {
      const int wi = (rr_ + i) % n_warps_;
      WarpState& w = warps_[static_cast<size_t>(wi)];
      if (w.finished) {
        if (w.last_load_ready > t) {
          scan.flags |= kFlagLsuRaw;  // exit waits for its loads
          scan.wake = std::min(scan.wake, w.last_load_ready);
        }
        continue;
      }
      const SmOp& op = kernel_.body[static_cast<size_t>(w.pc)];
      int64_t unblock = kNever;
      const Block block = BlockOf(w, op, t, lsu_used, &unblock);
      if (block != Block::kNone) {
        if (block == Block::kLoadResult) scan.flags |= kFlagLsuRaw;
        if (block == Block::kAluResult) scan.flags |= kFlagArith;
        if (block == Block::kQueueFull) scan.flags |= kFlagLsqFull;
        scan.wake = std::min(scan.wake, unblock);
        continue;
      }
      Issue(wi, &w, op, k, t);
      if (op.kind != SmOpKind::kAlu) lsu_used = true;
      ++scan.issued;
      last_issuer = wi;
      NextInstruction(&w);
    }
    if (last_issuer >= 0) rr_ = (last_issuer + 1) % n_warps_;
    return scan;
  }

  // What keeps warp w from issuing op at time t (kNone: nothing); `unblock` gets the time the
  // hazard ends where it is known (a taken memory port is free next cycle).
  Block BlockOf(const WarpState& w, const SmOp& op, int64_t t, bool lsu_used,
                int64_t* unblock) const {
    // Operands.
    int64_t operands = 0;
    bool waits_on_load = false;
    for (int d : op.deps) {
      const int64_t r = w.ready[static_cast<size_t>(d)];
      if (r > t && w.ready_is_load[static_cast<size_t>(d)]) waits_on_load = true;
      operands = std::max(operands, r);
    }
    if (w.iteration > 0) {
      for (int d : op.carried_deps) {
        const int64_t r = w.prev_ready[static_cast<size_t>(d)];
        if (r > t && w.prev_ready_is_load[static_cast<size_t>(d)]) waits_on_load = true;
        operands = std::max(operands, r);
      }
    }
    if (operands > t) {
      *unblock = operands;
      return waits_on_load ? Block::kLoadResult : Block::kAluResult;
    }
    if (op.kind != SmOpKind::kAlu && lsu_used) {
      return Block::kLsuPort;  // the memory port is taken this cycle; free next cycle
    }
    if (op.kind == SmOpKind::kLoad && static_cast<int>(loads_out_.size()) >= config_.mshr_entries) {
      *unblock = loads_out_.top();
      return Block::kQueueFull;
    }
    if (op.kind == SmOpKind::kStore &&
        static_cast<int>(store_queue_.size()) >= config_.store_queue_entries) {
      *unblock = store_queue_.front();
      return Block::kQueueFull;
    }
    return Block::kNone;
  }

  // Issues op of warp wi at cycle k (time t): its result time, the channel, the counts.
  void Issue(int wi, WarpState* w, const SmOp& op, int64_t k, int64_t t) {
    const size_t pc = static_cast<size_t>(w->pc);
    switch (op.kind) {
      case SmOpKind::kAlu:
        w->ready[pc] = (k + config_.alu_latency_cycles) * period_;
        w->ready_is_load[pc] = false;
        ++run_.alu_ops;
        break;
      case SmOpKind::kLoad: {
        const int64_t start = std::max(t, channel_free_);
        channel_free_ = start + load_service_;
        busy_fs_ += static_cast<double>(load_service_);
        const double latency_ns =
            op.latency_ns > 0.0
                ? op.latency_ns
                : config_.mem_latency_ns +
                      config_.mem_latency_jitter_ns * Draw(kernel_.seed, wi, w->iteration, w->pc);
        const int64_t ready = start + std::llround(latency_ns * kFsPerNs);
        w->ready[pc] = ready;
        w->ready_is_load[pc] = true;
        w->last_load_ready = std::max(w->last_load_ready, ready);
        loads_out_.push(ready);
        if (record_) {
          run_.timeline.loads.push_back(
              {MissKind::kLoad, k, std::max(k + 1, CeilDiv(ready, period_)), 0});
        }
        ++run_.loads;
        break;
      }
      case SmOpKind::kStore: {
        const int64_t start = std::max(t, channel_free_);
        channel_free_ = start + store_service_;
        busy_fs_ += static_cast<double>(store_service_);
        store_queue_.push_back(channel_free_);
        w->ready[pc] = t;
        w->ready_is_load[pc] = false;
        AddStoreInterval(k, std::max(k + 1, CeilDiv(channel_free_, period_)));
        ++run_.stores;
        break;
      }
    }
  }

  // Moves warp w past the instruction it issued; past the body's end, to its next iteration.
  void NextInstruction(WarpState* w) {
    if (++w->pc != n_ops_) return;
    w->pc = 0;
    std::swap(w->ready, w->prev_ready);
    std::swap(w->ready_is_load, w->prev_ready_is_load);
    if (++w->iteration == kernel_.iterations) {
      w->finished = true;
      ++finished_warps_;
    }
  }

  // Nothing issued in cycle k: nothing changes until the earliest wake-up (or a load return
  // that ends the kernel), so the idle cycles up to it are identical and skipped in one step.
  int64_t SkipIdleCycles(int64_t k, const CycleScan& scan) {
    int64_t wake = scan.wake;
    if (!loads_out_.empty()) wake = std::min(wake, loads_out_.top());
    if (wake == kNever) {
      throw std::logic_error("SM model: kernel '" + kernel_.name + "' cannot progress at cycle " +
                             std::to_string(k));
    }
    const int64_t next = std::max(k + 1, CeilDiv(wake, period_));
    if (record_) run_.timeline.AppendCycles(next - k, 0, scan.flags);
    return next;
  }

  // The timeline's store-busy intervals [start, end) in cycles, merged while they overlap.
  void AddStoreInterval(int64_t start, int64_t end) {
    if (!record_) return;
    if (store_open_start_ >= 0 && start <= store_open_end_) {
      store_open_end_ = std::max(store_open_end_, end);
      return;
    }
    if (store_open_start_ >= 0) {
      run_.timeline.stores.push_back({MissKind::kStore, store_open_start_, store_open_end_, 0});
    }
    store_open_start_ = start;
    store_open_end_ = end;
  }

  // The run's totals once it ended after k cycles.
  void Finish(int64_t k) {
    Timeline& tl = run_.timeline;
    if (record_ && store_open_start_ >= 0) {
      tl.stores.push_back({MissKind::kStore, store_open_start_, store_open_end_, 0});
    }
    run_.total_cycles = k;
    run_.time_s = static_cast<double>(k) / (run_.f_mhz * 1e6);
    // Channel time after the kernel's end (stores still draining) is not part of the run.
    const int64_t end_fs = k * period_;
    for (int64_t leave : store_queue_) {
      busy_fs_ -= static_cast<double>(leave - std::max(leave - store_service_, end_fs));
    }
    run_.mem_busy_s = busy_fs_ * 1e-15;
    if (record_) {
      // Store intervals past the end are cut at the last cycle: the kernel is over.
      for (MemoryMiss& m : tl.stores) m.end_cycle = std::min(m.end_cycle, k);
      tl.stores.erase(
          std::remove_if(tl.stores.begin(), tl.stores.end(),
                         [](const MemoryMiss& m) { return m.end_cycle <= m.start_cycle; }),
          tl.stores.end());
    }
  }

  const SmConfig& config_;
  const SmKernel& kernel_;
  const bool record_;
  const int64_t period_;         // fs per core cycle
  const int64_t load_service_;   // fs a load holds the channel
  const int64_t store_service_;  // fs a store holds the channel
  const int n_ops_;
  const int n_warps_;
  std::vector<WarpState> warps_;
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> loads_out_;  // ready
  std::deque<int64_t> store_queue_;  // leave times, ascending (FIFO channel)
  int64_t channel_free_ = 0;
  double busy_fs_ = 0.0;
  int finished_warps_ = 0;
  int rr_ = 0;  // the warp the next cycle's scan starts from
  int64_t store_open_start_ = -1, store_open_end_ = -1;  // merged store-busy interval, cycles
  SmRun run_;
};

}  // namespace

SmRun SimulateSm(const SmConfig& config, const SmKernel& kernel, double f_mhz,
                 bool record_timeline) {
  std::string error;
  if (!config.Check(&error)) throw std::invalid_argument("invalid SM config: " + error);
  const std::string problem = kernel.Problem();
  if (!problem.empty()) {
    throw std::invalid_argument("kernel '" + kernel.name + "' cannot run: " + problem);
  }
  if (!(std::isfinite(f_mhz) && f_mhz > 0.0)) {
    throw std::invalid_argument(fmt::format("f_mhz = {} must be > 0", f_mhz));
  }
  return SmSimulation(config, kernel, f_mhz, record_timeline).Run();
}

}  // namespace wattcal
