#!/usr/bin/env python3
"""Recompute the values the tests cite as read or computed "by hand" (Python's standard library,
plus scipy for one t quantile), straight from the shared files, with no wattcal code.

    python3 scripts/certify/hand_values.py DATASETS_DIR SAMPLES_DIR

DATASETS_DIR and SAMPLES_DIR are ../shared/datasets and ../shared/samples. Prints one `name value` line per
value, %.17g; tests/certified_values.h holds the same values as the tests use them, and
`CertifiedValues.HandValuesAreRecomputedIndependently` compares the two. Exits 0, or 2 on bad
input.

  counters_*    tests/counters_test.cc: Nsight Compute details pages (one row per launch, metric
                and unit): the mean over a kernel's launches, in base units (nsecond -> s);
                the H100 raw page: two launches' duration-weighted percentage and clock.
  aw_ci_*       tests/accelwattch_real_data_test.cc: the AccelWattch sheets' 95% half-widths of
                the MAPE over kernels: normal quantile x population SD / sqrt(n) (the paper's,
                Excel CONFIDENCE with STDEV.P) and Student t x sample SD / sqrt(n) (wattcal's
                default), from the sheets' own sim_total_W and hw_total_W columns.
"""
import csv
import math
import os
import statistics
import sys

UNIT_SCALE = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0}


def details_page(path):
    """Rows of an ncu --page details CSV after the application's own output."""
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    return list(csv.DictReader(lines[start:]))


def launch_mean(path, kernel, metric, section=None):
    """Mean over the launches of `kernel` of `metric` (in `section` when given), base units."""
    values = {}
    for row in details_page(path):
        if row["Kernel Name"] != kernel or row["Metric Name"] != metric:
            continue
        if section is not None and row["Section Name"] != section:
            continue
        scale = UNIT_SCALE.get(row["Metric Unit"], 1.0)
        values[row["ID"]] = float(row["Metric Value"].replace(",", "")) * scale
    if not values:
        raise ValueError("%s: no %s of %s" % (path, metric, kernel))
    return sum(values.values()) / len(values)


def raw_page(path):
    """Rows of an ncu --page raw CSV (header, units row, one row per launch) keyed by ID."""
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    rows = list(csv.DictReader(lines[start:]))
    return {r["ID"]: r for r in rows[1:]}


def number(text):
    return float(text.replace(",", ""))


def sheet_apes(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [abs(float(r["sim_total_W"]) - float(r["hw_total_W"])) / float(r["hw_total_W"]) * 100.0
            for r in rows]


def main():
    if len(sys.argv) != 3:
        print("usage:" + __doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    datasets = sys.argv[1]
    samples = os.path.join(sys.argv[2], "ncu")
    out = []
    try:
        aws = os.path.join(samples, "nvnsightcucli-2020_details-page_csv_with-app-stdout_v100-aws.csv")
        k2 = "Kernel2(bool*,bool*,bool*,bool*,int)"
        k1 = "Kernel(Node*,int*,bool*,bool*,bool*,int*,int)"
        out += [("counters_aws_kernel2_duration_s", launch_mean(aws, k2, "Duration")),
                ("counters_aws_kernel_duration_s", launch_mean(aws, k1, "Duration")),
                ("counters_aws_kernel2_memory_frequency_hz", launch_mean(aws, k2, "Memory Frequency")),
                ("counters_aws_kernel2_sm_frequency_hz", launch_mean(aws, k2, "SM Frequency")),
                ("counters_aws_kernel2_achieved_occupancy_pct", launch_mean(aws, k2, "Achieved Occupancy"))]
        lassen = os.path.join(samples, "nvnsightcucli-2020_details-page_csv_with-app-stdout_v100-lassen.csv")
        mwa = "Memory Workload Analysis"
        out += [("counters_lassen_kernel2_memory_throughput_bps", launch_mean(lassen, "Kernel2", "Memory Throughput", mwa)),
                ("counters_lassen_kernel_memory_throughput_bps", launch_mean(lassen, "Kernel", "Memory Throughput", mwa)),
                ("counters_lassen_kernel2_duration_s", launch_mean(lassen, "Kernel2", "Duration"))]
        raw = raw_page(os.path.join(datasets, "h100_capture", "ubench_random", "ncu_raw.csv"))
        a, b = raw["25"], raw["26"]
        ta, tb = number(a["gpu__time_duration.sum"]), number(b["gpu__time_duration.sum"])
        weighted = lambda m: (number(a[m]) * ta + number(b[m]) * tb) / (ta + tb)
        out += [("counters_h100_sweep_1_2_sm_throughput_pct",
                 weighted("sm__throughput.avg.pct_of_peak_sustained_elapsed")),
                ("counters_h100_sweep_1_2_sm_clock_hz", weighted("sm__cycles_elapsed.avg.per_second"))]

        from scipy.stats import t as student_t  # noqa: E402 (only here)
        z = statistics.NormalDist().inv_cdf(0.975)
        for name in ("hw", "sass_sim", "hybrid", "ptx_sim"):
            ape = sheet_apes(os.path.join(datasets, "accelwattch", "volta_qv100", "per_kernel_%s.csv" % name))
            n = len(ape)
            out.append(("aw_ci_volta_%s_normal_population_sd_pct" % name, z * statistics.pstdev(ape) / math.sqrt(n)))
            out.append(("aw_ci_volta_%s_student_t_pct" % name,
                        float(student_t.ppf(0.975, n - 1)) * statistics.stdev(ape) / math.sqrt(n)))
    except (OSError, KeyError, ValueError, StopIteration) as e:
        print("hand_values.py: error: %s" % e, file=sys.stderr)
        return 2
    for name, value in out:
        print("%s %.17g" % (name, value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
