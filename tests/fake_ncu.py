#!/usr/bin/env python3
"""A stand-in for Nsight Compute's `ncu` (tests and the rehearsal of scripts/device_capture.sh
on a machine without a GPU). It takes ncu's options the way wattcal-capture passes them, runs the
program with WATTCAL_SIMULATED_LAUNCH_LOG set (the simulated device logs each launch there), and
prints the raw page ncu would: tool lines, the header with the metrics asked for, the units row,
one row per logged launch (one "app_kernel" row when nothing was logged) with made-up but
well-formed values, to stdout or to --log-file. `--version` prints a version line."""
import os
import subprocess
import sys
import tempfile
import zlib


def unit(metric):
    if "time_duration" in metric:
        return "nsecond"
    if "cycles" in metric and "per_second" not in metric:
        return "cycle"
    if "bytes" in metric:
        return "byte"
    if "pct" in metric:
        return "%"
    if "per_second" in metric:
        return "cycle/second"
    if "wavefronts" in metric:
        return ""
    return "inst"


def value(metric, row):
    if "time_duration" in metric:
        return 2.0e6
    if "cycles_elapsed" in metric or "cycles_active" in metric:
        return 3.96e6 * (132 if metric.endswith(".sum") else 1)
    if "pct" in metric:
        return 50.0
    if "per_second" in metric:
        return 1.98e9
    return 1.0e3 * (1 + (zlib.crc32(metric.encode()) + 7 * row) % 50)


def query_metrics(args):
    """`--query-metrics --chip CHIP`: the base names of every metric the descriptions in
    microbench_specs/gpus/ read, less those named in $FAKE_NCU_LACKS (comma-separated), in ncu's
    table layout. $FAKE_NCU_QUERY_FAILS makes it fail as ncu does without a chip it knows."""
    if os.environ.get("FAKE_NCU_QUERY_FAILS"):
        sys.stderr.write("==ERROR== Failed to query metrics\n")
        return 1
    import glob
    import json
    import re
    root = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "microbench_specs", "gpus")
    names = {"gpu__time_duration", "sm__cycles_elapsed", "sm__cycles_active"}
    for path in glob.glob(os.path.join(root, "*.json")):
        with open(path) as f:
            names.update(m.split(".")[0] for m in re.findall(r'"([a-z0-9_]+__[a-z0-9_.]+)"', f.read()))
    lacks = {m.split(".")[0] for m in os.environ.get("FAKE_NCU_LACKS", "").split(",") if m}
    chip = args[args.index("--chip") + 1] if "--chip" in args else "current device"
    print("Device %s (stand-in: tests/fake_ncu.py)" % chip.upper())
    print("-" * 60)
    print("Metric Name                         Metric Type   Metric Unit   Metric Description")
    for name in sorted(names - lacks):
        print("%-35s Counter       inst          a stand-in metric" % name)
    return 0


def main():
    args = sys.argv[1:]
    if "--version" in args:
        print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.0.0 (stand-in: tests/fake_ncu.py)")
        return 0
    if "--query-metrics" in args:
        return query_metrics(args)
    metrics, log_file, i = [], None, 0
    takes_value = {"--page", "--clock-control", "--target-processes", "--metrics", "--nvtx-include", "--log-file"}
    while i < len(args) and args[i].startswith("--"):
        if args[i] == "--metrics":
            metrics = [m for m in args[i + 1].split(",") if m]
        if args[i] == "--log-file":
            log_file = args[i + 1]
        i += 2 if args[i] in takes_value else 1
    command = args[i:]
    if not command:
        sys.stderr.write("==ERROR== no application to profile\n")
        return 1
    with tempfile.NamedTemporaryFile(prefix="fake_ncu_", suffix=".log", delete=False) as t:
        launches_path = t.name
    env = dict(os.environ, WATTCAL_SIMULATED_LAUNCH_LOG=launches_path)
    rc = subprocess.call(command, env=env)
    with open(launches_path) as f:
        launches = [line.strip().split(",") for line in f if line.strip()]
    os.unlink(launches_path)
    if rc != 0:
        sys.stderr.write("==ERROR== the application returned an error code (%d)\n" % rc)
        return rc
    if not launches:
        launches = [["app_kernel", "132", "256", "1"]]
    q = lambda s: '"%s"' % s
    lines = ["==PROF== Connected to process %d (%s)" % (os.getpid(), command[0])]
    lines.append(",".join([q(c) for c in ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
                                           "Stream", "Block Size", "Grid Size", "Device", "CC"]] + [q(m) for m in metrics]))
    lines.append(",".join([q("")] * 11 + [q(unit(m)) for m in metrics]))
    for row, (kernel, blocks, threads, _iters) in enumerate(launches):
        fields = [str(row), "42", os.path.basename(command[0]), "127.0.0.1", kernel, "1", "7", "(%s, 1, 1)" % threads,
                  "(%s, 1, 1)" % blocks, "0", "9.0"]
        lines.append(",".join([q(f) for f in fields] + [q("%.0f" % value(m, row)) for m in metrics]))
    lines.append("==PROF== Disconnected from process %d" % os.getpid())
    text = "\n".join(lines) + "\n"
    if log_file:
        with open(log_file, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
