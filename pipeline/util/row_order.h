// Lexicographic order of fixed-width rows of doubles, by sorting indices: what a
// std::set<std::vector<double>> or std::map keyed by rows gives, without one allocation per row
// (on the 6528-row Titan X set those sets were 8% of a calibration; issue 14).
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

namespace wattcal {

// True when row a of `keys` (row-major, `width` values a row) sorts before row b, as
// std::vector<double>'s operator< would.
inline bool RowLess(const std::vector<double>& keys, int width, int a, int b) {
  const double* x = keys.data() + static_cast<size_t>(a) * width;
  const double* y = keys.data() + static_cast<size_t>(b) * width;
  return std::lexicographical_compare(x, x + width, y, y + width);
}

// Rows a and b are equivalent (neither sorts before the other), as a std::set would merge them.
inline bool RowEquivalent(const std::vector<double>& keys, int width, int a, int b) {
  return !RowLess(keys, width, a, b) && !RowLess(keys, width, b, a);
}

// The row indices in lexicographic order of their rows, equivalent rows by index.
inline std::vector<int> LexicographicRowOrder(const std::vector<double>& keys, int width) {
  const int rows = width > 0 ? static_cast<int>(keys.size() / width) : 0;
  std::vector<int> order(rows);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const double* x = keys.data() + static_cast<size_t>(a) * width;
    const double* y = keys.data() + static_cast<size_t>(b) * width;
    for (int k = 0; k < width; ++k) {
      if (x[k] < y[k]) return true;
      if (y[k] < x[k]) return false;
    }
    return a < b;
  });
  return order;
}

// The number of distinct rows (equivalence classes) given their lexicographic order.
inline int CountDistinctRows(const std::vector<double>& keys, int width,
                             const std::vector<int>& order) {
  int distinct = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || !RowEquivalent(keys, width, order[k - 1], order[k])) ++distinct;
  }
  return distinct;
}

}  // namespace wattcal
