// Per-(application, clock) tables of DCGM field means with measured power, as the nsfcac V100
// study publishes them (../shared/datasets/nsfcac_v100, datasets/README.md §3), read through a
// field set (io/field_set.h) into a measured corpus: one row per application and locked clock,
// benchmark = the application, so that cross-validation by benchmark holds applications out.
//
//   ,index,application,sm_app_clock,gr_engine_active,sm_active,...,power_usage,...,fp_active
//
// A column feeds a field when it is the field's dmon tag (TENSO, FP16A) or its name without
// DCGM_FI_PROF_ and PIPE_, in lower case (fp64_active is DCGM_FI_PROF_PIPE_FP64_ACTIVE). The
// clock is `sm_app_clock` (MHz), the power `power_usage` (W); the memory clock is the set's
// default (the study did not move it). The SPEC file's fp64_active is a carried-over constant for
// its single-precision applications (README §3): where `fp_active` equals `fp32_active` the
// application's dominant precision is FP32 and its fp64_active is read as 0 (one warning says how
// many rows). Every problem is an InputError naming FILE:LINE and the column.
#pragma once

#include <string>

#include "io/corpus.h"
#include "io/field_set.h"

namespace wattcal {

Corpus ReadFieldRuns(const std::string& path, const FieldSet& set);

}  // namespace wattcal
