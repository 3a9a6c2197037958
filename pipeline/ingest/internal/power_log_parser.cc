#include "ingest/internal/power_log_parser.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/errors.h"

namespace wattcal {

void PowerLogReader::Parser::Finish() const {
  if (!options_.gpu.empty() && !gpu_matched_) {
    throw InputError(path_, 0, "gpu",
                     fmt::format("no row of GPU '{}' in the log (it holds {})", options_.gpu,
                                 seen_gpus_.empty() ? std::string("no GPU rows")
                                                    : power_log_internal::JoinNames(seen_gpus_)));
  }
}

bool PowerLogReader::Parser::SelectGpu(const std::string_view* ids, size_t count, int64_t line,
                                       const std::string& field) {
  if (!options_.gpu.empty()) {
    for (size_t i = 0; i < count; ++i) {
      if (ids[i] == options_.gpu) {
        gpu_matched_ = true;
        return true;
      }
    }
    if (count > 0 && seen_gpus_.size() < power_log_internal::kMaxRememberedGpus &&
        std::find(seen_gpus_.begin(), seen_gpus_.end(), ids[0]) == seen_gpus_.end()) {
      seen_gpus_.emplace_back(ids[0]);
    }
    return false;
  }
  if (count == 0) return true;
  if (!have_first_gpu_) {
    first_gpu_.assign(ids[0].data(), ids[0].size());
    first_gpu_line_ = line;
    have_first_gpu_ = true;
    return true;
  }
  if (ids[0] != first_gpu_) {
    throw InputError(path_, line, field,
                     fmt::format("the log holds several GPUs ('{}' on line {}, '{}' here): "
                                 "choose one with the gpu option",
                                 first_gpu_, first_gpu_line_, ids[0]));
  }
  return true;
}

}  // namespace wattcal
