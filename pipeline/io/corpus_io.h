// Reading measurement corpora: gpmTOOL's files (training, real/allF, prediction) and the
// tidy CSV. Every problem with the data is an InputError naming FILE:LINE and the field.
#pragma once

#include <string>

#include "io/corpus.h"
#include "io/csv_reader.h"

namespace wattcal {

struct CorpusReadOptions {
  // Tidy files only: default (reference) core frequency in MHz; 0 = infer it from the file,
  // allowed only when every row has the same core frequency.
  double default_core_mhz = 0.0;
  // Tidy files only: default (reference) memory frequency in MHz; 0 = infer it from the
  // file, allowed only when every row has the same memory frequency.
  double default_mem_mhz = 0.0;

  // False, with a sentence naming the field, its value and the rule broken, when invalid.
  bool Check(std::string* error) const;
};

// Reads a corpus file, whose format is recognised from its first line:
//
// * gpmTOOL (TPDS 2019): 4 header lines (number of domains, default frequency per domain
//   in MHz, components per domain, component names), then rows of one of three widths:
//     P,f_1..f_D,U_1..U_n          training   -> CorpusKind::kTraining
//     name,P,f_1..f_D,U_1..U_n     real/allF  -> CorpusKind::kMeasured
//     name,U_1..U_n                prediction -> CorpusKind::kActivity
//   The kind follows from the width of the first data row. Training rows carry no names:
//   rows with identical utilisation vectors form one benchmark, named micro_001, micro_002,
//   ... in order of first appearance.
// * tidy CSV: a header row starting with `benchmark`, then in any order `power_w` (or
//   `power_mw`), `f_core_mhz` and `f_mem_mhz` (or `_ghz`, `_khz`), and one column per
//   component, `core:NAME`, `mem:NAME` or `NAME` (core). Without a power column the file
//   is an activity corpus (frequencies optional). An optional `flags` column holds each
//   row's window flags ("" or names such as power_cap;clock_moved, see corpus.h). Default frequencies come from `options`
//   or, when 0, from the file's single frequency of that domain. An activity file without
//   frequency columns and without option defaults has default frequencies 0 (unknown).
//
// The preamble "# wattcal-tidy ... power_limit_w=W" gives Corpus::power_limit_w (0 < W <= 10000),
// and a line "# gpu: NAME" Corpus::gpu (the GPU the rows were measured on).
// Files without a flags column or a power limit (older corpora) read as before.
// Utilisations above 1 are kept as read and reported in one LogWarning.
// Throws InputError for bad data, OptionError when `options` fails Check().
Corpus ReadCorpus(const std::string& path, const CorpusReadOptions& options = {});

// Writes any corpus as wattcal's tidy CSV: a "# wattcal-tidy default_f_core_mhz=..." preamble
// (when the defaults are known; with power_limit_w=W when the limit is known), "# optional
// components: ..." and "# gpu: NAME" lines when known, then benchmark[,power_w][,f_core_mhz[,f_mem_mhz]] and one
// core:/mem: column per component (flags after the frequencies when the corpus has them); numbers in shortest round-trip form.
std::string CorpusToTidyCsv(const Corpus& corpus);

// Reads the 4-line gpmTOOL header (shared by corpus and model files) from the start of
// `reader`: domains are named "core" and "mem". Throws InputError on a malformed header.
Layout ReadGpmtoolHeader(CsvReader* reader);

}  // namespace wattcal
