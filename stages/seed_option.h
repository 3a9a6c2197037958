// The --seed check every command shares (the stages and wattcal-capture), in a library of its own
// so that wattcal-capture, carried to bare GPU machines, links nothing of the fitting code.
#pragma once

#include <CLI/CLI.hpp>

namespace wattcal {

// A seed: a whole number in [0, 2^64 - 1], written in decimal digits only, so that -1 and
// 2^64 are refused rather than wrapped onto 2^64 - 1. `app.add_option("--seed", seed)->check(Seed())`.
CLI::Validator Seed();

}  // namespace wattcal
