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
  const int64_t period = std::llround(1e9 / f_mhz);  // fs per core cycle
  const int64_t load_service = std::llround(config.load_service_ns * kFsPerNs);
  const int64_t store_service = std::llround(config.store_service_ns * kFsPerNs);
  const int n_ops = static_cast<int>(kernel.body.size());
  const int n_warps = kernel.warps;

  std::vector<WarpState> warps(static_cast<size_t>(n_warps));
  for (WarpState& w : warps) {
    w.ready.assign(n_ops, 0);
    w.prev_ready.assign(n_ops, 0);
    w.ready_is_load.assign(n_ops, false);
    w.prev_ready_is_load.assign(n_ops, false);
  }
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> loads_out;  // ready
  std::deque<int64_t> store_queue;  // leave times, ascending (FIFO channel)
  int64_t channel_free = 0;
  double busy_fs = 0.0;

  SmRun run;
  run.f_mhz = f_mhz;
  Timeline& tl = run.timeline;
  tl.kernel = kernel.name;
  tl.base_mhz = f_mhz;
  tl.issue_width = config.issue_width;
  int64_t store_open_start = -1, store_open_end = -1;  // merged store-busy interval, cycles
  auto add_store_interval = [&](int64_t start, int64_t end) {
    if (!record_timeline) return;
    if (store_open_start >= 0 && start <= store_open_end) {
      store_open_end = std::max(store_open_end, end);
      return;
    }
    if (store_open_start >= 0) {
      tl.stores.push_back({MissKind::kStore, store_open_start, store_open_end, 0});
    }
    store_open_start = start;
    store_open_end = end;
  };

  int finished_warps = 0;
  int rr = 0;
  int64_t k = 0;
  while (true) {
    const int64_t t = k * period;
    while (!loads_out.empty() && loads_out.top() <= t) loads_out.pop();
    while (!store_queue.empty() && store_queue.front() <= t) store_queue.pop_front();
    if (finished_warps == n_warps && loads_out.empty()) break;

    int issued = 0;
    bool lsu_used = false;
    uint32_t flags = 0;
    int64_t wake = kNever;  // earliest time a blocked warp may proceed
    int last_issuer = -1;
    for (int i = 0; i < n_warps && issued < config.issue_width; ++i) {
      const int wi = (rr + i) % n_warps;
      WarpState& w = warps[static_cast<size_t>(wi)];
      if (w.finished) {
        if (w.last_load_ready > t) {
          flags |= kFlagLsuRaw;  // exit waits for its loads
          wake = std::min(wake, w.last_load_ready);
        }
        continue;
      }
      const SmOp& op = kernel.body[static_cast<size_t>(w.pc)];
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
      Block block = Block::kNone;
      int64_t unblock = kNever;
      if (operands > t) {
        block = waits_on_load ? Block::kLoadResult : Block::kAluResult;
        unblock = operands;
      } else if (op.kind != SmOpKind::kAlu && lsu_used) {
        block = Block::kLsuPort;  // the memory port is taken this cycle; free next cycle
      } else if (op.kind == SmOpKind::kLoad &&
                 static_cast<int>(loads_out.size()) >= config.mshr_entries) {
        block = Block::kQueueFull;
        unblock = loads_out.top();
      } else if (op.kind == SmOpKind::kStore &&
                 static_cast<int>(store_queue.size()) >= config.store_queue_entries) {
        block = Block::kQueueFull;
        unblock = store_queue.front();
      }
      if (block != Block::kNone) {
        if (block == Block::kLoadResult) flags |= kFlagLsuRaw;
        if (block == Block::kAluResult) flags |= kFlagArith;
        if (block == Block::kQueueFull) flags |= kFlagLsqFull;
        wake = std::min(wake, unblock);
        continue;
      }

      // Issue.
      const size_t pc = static_cast<size_t>(w.pc);
      switch (op.kind) {
        case SmOpKind::kAlu:
          w.ready[pc] = (k + config.alu_latency_cycles) * period;
          w.ready_is_load[pc] = false;
          ++run.alu_ops;
          break;
        case SmOpKind::kLoad: {
          const int64_t start = std::max(t, channel_free);
          channel_free = start + load_service;
          busy_fs += static_cast<double>(load_service);
          const double latency_ns =
              op.latency_ns > 0.0
                  ? op.latency_ns
                  : config.mem_latency_ns +
                        config.mem_latency_jitter_ns * Draw(kernel.seed, wi, w.iteration, w.pc);
          const int64_t ready = start + std::llround(latency_ns * kFsPerNs);
          w.ready[pc] = ready;
          w.ready_is_load[pc] = true;
          w.last_load_ready = std::max(w.last_load_ready, ready);
          loads_out.push(ready);
          if (record_timeline) {
            tl.loads.push_back({MissKind::kLoad, k, std::max(k + 1, CeilDiv(ready, period)), 0});
          }
          lsu_used = true;
          ++run.loads;
          break;
        }
        case SmOpKind::kStore: {
          const int64_t start = std::max(t, channel_free);
          channel_free = start + store_service;
          busy_fs += static_cast<double>(store_service);
          store_queue.push_back(channel_free);
          w.ready[pc] = t;
          w.ready_is_load[pc] = false;
          add_store_interval(k, std::max(k + 1, CeilDiv(channel_free, period)));
          lsu_used = true;
          ++run.stores;
          break;
        }
      }
      ++issued;
      last_issuer = wi;
      if (++w.pc == n_ops) {
        w.pc = 0;
        std::swap(w.ready, w.prev_ready);
        std::swap(w.ready_is_load, w.prev_ready_is_load);
        if (++w.iteration == kernel.iterations) {
          w.finished = true;
          ++finished_warps;
        }
      }
    }
    if (last_issuer >= 0) rr = (last_issuer + 1) % n_warps;

    if (issued > 0) {
      // A full-issue cycle was not scanned to the end: its hazards are unknown and unneeded.
      if (record_timeline) tl.AppendCycles(1, issued, issued == config.issue_width ? 0u : flags);
      ++k;
      continue;
    }
    // Nothing issued: nothing changes until the earliest wake-up (or a load return that ends
    // the kernel), so the idle cycles up to it are identical and skipped in one step.
    if (!loads_out.empty()) wake = std::min(wake, loads_out.top());
    if (wake == kNever) {
      throw std::logic_error("SM model: kernel '" + kernel.name + "' cannot progress at cycle " +
                             std::to_string(k));
    }
    const int64_t next = std::max(k + 1, CeilDiv(wake, period));
    if (record_timeline) tl.AppendCycles(next - k, 0, flags);
    k = next;
  }
  if (record_timeline && store_open_start >= 0) {
    tl.stores.push_back({MissKind::kStore, store_open_start, store_open_end, 0});
  }
  run.total_cycles = k;
  run.time_s = static_cast<double>(k) / (f_mhz * 1e6);
  // Channel time after the kernel's end (stores still draining) is not part of the run.
  const int64_t end_fs = k * period;
  for (int64_t leave : store_queue) {
    busy_fs -= static_cast<double>(leave - std::max(leave - store_service, end_fs));
  }
  run.mem_busy_s = busy_fs * 1e-15;
  if (record_timeline) {
    // Store intervals past the end are cut at the last cycle: the kernel is over.
    for (MemoryMiss& m : tl.stores) m.end_cycle = std::min(m.end_cycle, k);
    tl.stores.erase(
        std::remove_if(tl.stores.begin(), tl.stores.end(),
                       [](const MemoryMiss& m) { return m.end_cycle <= m.start_cycle; }),
        tl.stores.end());
  }
  return run;
}

}  // namespace wattcal
