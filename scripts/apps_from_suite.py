#!/usr/bin/env python3
"""Application-style capture directories made from a suite capture (wattcal-capture --out, or
../shared/datasets/h100_capture/*): each "application" is a run of consecutive benchmark windows
(for example 4 random mixes), recorded the way `wattcal-capture --app` records a program:

  OUT/windows.csv         kernel,start_us,end_us,run,mark: the application's windows, one per
                          benchmark it is made of, all under the application's name
  OUT/ncu/<app>.csv       Nsight Compute's raw page with the profiled launch of each of those
                          benchmarks (the multi-kernel export that ingest sums per launch)
  OUT/nvml_power.csv      the suite's power logs (and nvidia_smi_power.csv, with the throttle
                          reasons, when it has one), unless --no-power (prediction only)
  OUT/capture.json        what was taken from where

It exists to test the applications path on real measurements where no real applications were
recorded: the same workloads predicted with and without their power log must get the same
predictions, and the measured ones score against their own measured power.

  apps_from_suite.py SUITE_DIR OUT_DIR [--group 4] [--select REGEX] [--no-power]
"""

import argparse
import csv
import json
import os
import re
import shutil
import sys


def fail(message):
    sys.exit("apps_from_suite.py: error: " + message)


def read_windows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        fail("%s: no windows" % path)
    return rows


def read_raw_page(path):
    """(prefix lines, header line, units line, [(launch line, fields)]) of an ncu raw page."""
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None or start + 1 >= len(lines):
        fail("%s: no Nsight Compute raw page (header and units row)" % path)
    launches = []
    for line in lines[start + 2:]:
        if not line.startswith('"'):
            continue  # tool messages and program output
        fields = next(csv.reader([line]))
        launches.append((line, fields))
    return lines[start], lines[start + 1], launches, next(csv.reader([lines[start]]))


def size(text):
    """(x, y, z) -> x*y*z"""
    numbers = [int(v) for v in re.findall(r"\d+", text)]
    product = 1
    for n in numbers:
        product *= n
    return product


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", help="a suite capture directory (windows.csv, ncu_raw.csv, nvml_power.csv)")
    p.add_argument("out", help="the application capture directory to write (must not exist)")
    p.add_argument("--group", type=int, default=4, help="consecutive benchmarks per application (default 4)")
    p.add_argument("--select", default="", help="only benchmarks whose name matches this regular expression")
    p.add_argument("--no-power", action="store_true", help="leave the power log out (prediction only)")
    a = p.parse_args()
    if a.group < 1:
        fail("--group must be >= 1")
    if os.path.exists(a.out):
        fail("%s exists: give a new directory" % a.out)

    windows = read_windows(os.path.join(a.suite, "windows.csv"))
    header, units, launches, names = read_raw_page(os.path.join(a.suite, "ncu_raw.csv"))
    grid, block = names.index("Grid Size"), names.index("Block Size")
    # Set-up launches (e.g. the buffer fill) come first: drop those that do not match the first
    # window's configuration while there are more launches than windows, as ingest does.
    first = 0
    w0 = windows[0]
    while len(launches) - first > len(windows) and (
            size(launches[first][1][grid]) != int(w0["blocks"]) or size(launches[first][1][block]) != int(w0["threads"])):
        first += 1
    launches = launches[first:]
    if len(launches) != len(windows):
        fail("%d profiled launches for %d windows" % (len(launches), len(windows)))
    for w, (_, fields) in zip(windows, launches):
        if size(fields[grid]) != int(w["blocks"]) or size(fields[block]) != int(w["threads"]):
            fail("window %s does not match its launch (%s x %s)" % (w["kernel"], fields[grid], fields[block]))

    pattern = re.compile(a.select) if a.select else None
    chosen = [i for i, w in enumerate(windows) if pattern is None or pattern.search(w["kernel"])]
    apps = [chosen[k:k + a.group] for k in range(0, len(chosen) - a.group + 1, a.group)]
    if not apps:
        fail("no application of %d benchmarks among the %d selected" % (a.group, len(chosen)))

    os.makedirs(os.path.join(a.out, "ncu"))
    made = []
    with open(os.path.join(a.out, "windows.csv"), "w", newline="") as out:
        out.write("kernel,start_us,end_us,run,mark\n")
        for n, members in enumerate(apps):
            name = "app%02d_%s" % (n, windows[members[0]]["kernel"].split("_")[0] + ("-" + windows[members[-1]]["kernel"].split("_")[0][-3:] if len(members) > 1 else ""))
            for i in members:
                out.write("%s,%s,%s,1,%s\n" % (name, windows[i]["start_us"], windows[i]["end_us"], windows[i]["kernel"]))
            with open(os.path.join(a.out, "ncu", name + ".csv"), "w", newline="") as export:
                export.write(header + "\n" + units + "\n")
                for i in members:
                    export.write(launches[i][0] + "\n")
            made.append({"app": name, "benchmarks": [windows[i]["kernel"] for i in members]})
    if not a.no_power:
        for log in ("nvml_power.csv", "nvidia_smi_power.csv"):  # power, and the throttle reasons
            if os.path.exists(os.path.join(a.suite, log)):
                shutil.copyfile(os.path.join(a.suite, log), os.path.join(a.out, log))
    with open(os.path.join(a.out, "capture.json"), "w") as f:
        json.dump({"format": "wattcal-capture", "kind": "apps", "made_from": os.path.abspath(a.suite),
                   "group": a.group, "select": a.select, "power_log": not a.no_power, "apps": made}, f, indent=2)
        f.write("\n")
    print("%s: %d applications of %d benchmarks%s" % (a.out, len(apps), a.group,
                                                      "" if not a.no_power else ", no power log"))


if __name__ == "__main__":
    main()
