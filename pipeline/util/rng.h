// Portable seeded random draws (the virtual GPU, constant power's bootstrap): std::mt19937's
// output is fully specified by the standard, and the mappings below are ours
// (std::normal_distribution and friends are implementation-defined), so the same seed gives the
// same bytes everywhere.
#pragma once

#include <cmath>
#include <random>

namespace wattcal {

class Rng {
 public:
  explicit Rng(unsigned seed) : engine_(seed) {}
  // Uniform in (0, 1).
  double Uniform() { return (engine_() + 0.5) / 4294967296.0; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Standard normal (Box-Muller).
  double Normal() {
    const double u1 = Uniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  // Uniform integer in [0, n).
  int Index(int n) { return static_cast<int>(engine_() % static_cast<unsigned>(n)); }

 private:
  std::mt19937 engine_;
};

}  // namespace wattcal
