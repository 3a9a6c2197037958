#!/usr/bin/env python3
"""Recompute the values the tests cite as read or computed "by hand" (Python's standard library,
plus scipy for one t quantile), straight from the shared files, with no wattcal code.

    python3 scripts/certify/hand_values.py DATASETS_DIR SAMPLES_DIR

DATASETS_DIR and SAMPLES_DIR are ../shared/datasets and ../shared/samples. Prints one
`name value bound` line per value: the value (%.17g) and a bound on its relative rounding error
in binary64 (%.3g), from the arithmetic that computed it, not from one machine: the number of
roundings, the condition of each sum or standard deviation on this data, and the documented
accuracy of the one library routine whose result differs between versions (the t quantile).
tests/certified_values.h holds the same values as the tests use them, and
`CertifiedValues.HandValuesAreRecomputedIndependently` compares the two within the sum of two such
bounds (the header's computation and this one, each within its bound of the exact value). Exits
0, or 2 on bad input.

The bounds (u = 2^-53, gamma(k) = k u / (1 - k u), Higham, "Accuracy and Stability of Numerical
Algorithms", 2nd ed., Lemma 3.1 and Sec. 4.2):
  - a sum of n terms, each with relative error e: (e + gamma(n - 1)) sum|x| / |sum x| (any order
    of summation, compensated or not, stays within it);
  - a product or quotient: u each; math.sqrt: u (correctly rounded);
  - statistics.pstdev/stdev: exact over its float inputs, then one or two roundings (2u); inputs
    with relative error e move it by at most e ||x||_2 / (sqrt(m) sd), m = n or n - 1;
  - NormalDist().inv_cdf: Wichura's AS 241 (accurate to about 1e-16) evaluated in some 30
    floating-point operations: 1e-16 + gamma(32);
  - scipy's t.ppf inverts the incomplete beta function of a = df/2, b = 1/2, whose relative error
    Cephes documents as at most 2.2e-13 for a, b <= 85 (5.3e-12 up to 1000; incbet.c, "ACCURACY");
    a relative error e of the probability p moves the quantile q by p e / (q pdf(q)) relative.

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

U = 2.0 ** -53


def gamma(k):
    return k * U / (1.0 - k * U)


def sum_bound(terms, term_error):
    """Relative error bound of sum(terms), each term with relative error `term_error`."""
    return (term_error + gamma(max(len(terms) - 1, 0))) * sum(abs(t) for t in terms) / abs(sum(terms))


def sd_bound(x, input_error, ddof):
    """Relative error bound of statistics.(p)stdev(x) when each x has relative error input_error."""
    sd = statistics.stdev(x) if ddof else statistics.pstdev(x)
    return input_error * math.sqrt(sum(v * v for v in x) / (len(x) - ddof)) / sd + 2 * U


def t_quantile_bound(p, df):
    """Relative error bound of scipy's t.ppf(p, df) (the docstring's last item)."""
    from scipy.stats import t as student_t  # noqa: E402 (only here)
    if df / 2.0 <= 85:
        incbet = 2.2e-13
    elif df / 2.0 <= 1000:
        incbet = 5.3e-12
    else:
        raise ValueError("%d degrees of freedom: beyond the documented accuracy of incbet" % df)
    q = float(student_t.ppf(p, df))
    return p * incbet / (q * float(student_t.pdf(q, df)))


def details_page(path):
    """Rows of an ncu --page details CSV after the application's own output."""
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    return list(csv.DictReader(lines[start:]))


def launch_mean(path, kernel, metric, section=None):
    """Mean over the launches of `kernel` of `metric` (in `section` when given), base units, and
    its relative error bound (each value scaled: u; the sum; the division: u)."""
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
    terms = list(values.values())
    return sum(terms) / len(terms), sum_bound(terms, U) + U


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
        out += [("counters_aws_kernel2_duration_s",) + launch_mean(aws, k2, "Duration"),
                ("counters_aws_kernel_duration_s",) + launch_mean(aws, k1, "Duration"),
                ("counters_aws_kernel2_memory_frequency_hz",) + launch_mean(aws, k2, "Memory Frequency"),
                ("counters_aws_kernel2_sm_frequency_hz",) + launch_mean(aws, k2, "SM Frequency"),
                ("counters_aws_kernel2_achieved_occupancy_pct",) + launch_mean(aws, k2, "Achieved Occupancy")]
        lassen = os.path.join(samples, "nvnsightcucli-2020_details-page_csv_with-app-stdout_v100-lassen.csv")
        mwa = "Memory Workload Analysis"
        out += [("counters_lassen_kernel2_memory_throughput_bps",) + launch_mean(lassen, "Kernel2", "Memory Throughput", mwa),
                ("counters_lassen_kernel_memory_throughput_bps",) + launch_mean(lassen, "Kernel", "Memory Throughput", mwa),
                ("counters_lassen_kernel2_duration_s",) + launch_mean(lassen, "Kernel2", "Duration")]
        raw = raw_page(os.path.join(datasets, "h100_capture", "ubench_random", "ncu_raw.csv"))
        a, b = raw["25"], raw["26"]
        ta, tb = number(a["gpu__time_duration.sum"]), number(b["gpu__time_duration.sum"])

        def weighted(m):
            # Two products (u each) summed, over a sum of two positive times (gamma(1)), divided (u).
            terms = [number(a[m]) * ta, number(b[m]) * tb]
            return (terms[0] + terms[1]) / (ta + tb), sum_bound(terms, U) + gamma(1) + U
        out += [("counters_h100_sweep_1_2_sm_throughput_pct",)
                + weighted("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                ("counters_h100_sweep_1_2_sm_clock_hz",) + weighted("sm__cycles_elapsed.avg.per_second")]

        from scipy.stats import t as student_t  # noqa: E402 (only here)
        z = statistics.NormalDist().inv_cdf(0.975)
        z_bound = 1e-16 + gamma(32)
        ape_bound = gamma(3)  # |sim - hw| / hw * 100: three roundings
        for name in ("hw", "sass_sim", "hybrid", "ptx_sim"):
            ape = sheet_apes(os.path.join(datasets, "accelwattch", "volta_qv100", "per_kernel_%s.csv" % name))
            n = len(ape)
            # quantile x SD / sqrt(n): the two factors' bounds, then sqrt, product and quotient (3u).
            out.append(("aw_ci_volta_%s_normal_population_sd_pct" % name, z * statistics.pstdev(ape) / math.sqrt(n),
                        z_bound + sd_bound(ape, ape_bound, 0) + 3 * U))
            out.append(("aw_ci_volta_%s_student_t_pct" % name,
                        float(student_t.ppf(0.975, n - 1)) * statistics.stdev(ape) / math.sqrt(n),
                        t_quantile_bound(0.975, n - 1) + sd_bound(ape, ape_bound, 1) + 3 * U))
    except (OSError, KeyError, ValueError, StopIteration) as e:
        print("hand_values.py: error: %s" % e, file=sys.stderr)
        return 2
    for name, value, bound in out:
        print("%s %.17g %.3g" % (name, value, bound))
    return 0


if __name__ == "__main__":
    sys.exit(main())
