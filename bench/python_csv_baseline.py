#!/usr/bin/env python3
"""Python baseline for bench/ingest_bench.cc: reads the same nvidia-smi log with Python's csv
module, parsing it as wattcal's PowerLogReader does, and prints MB/s (one core).

Per row: the timestamp `YYYY/MM/DD HH:MM:SS.mmm` to epoch seconds (the date converted once
per distinct date, the time of day by slicing, as PowerLogReader caches the date), power from
power.draw.instant (else power.draw) with its unit (W/mW/kW), SM and memory clocks (MHz/GHz/
kHz), temperature.gpu, `[N/A]` values, and the non-decreasing-time check. `--strptime` times the
plainer datetime.strptime version too.

    WATTCAL_BENCH_LOG=/tmp/smi.csv build/bin/ingest_bench   # writes and keeps the log
    python3 bench/python_csv_baseline.py /tmp/smi.csv [--strptime]
"""
import argparse
import calendar
import csv
import datetime
import math
import os
import sys
import time

POWER_UNITS = {"W": 1.0, "mW": 1e-3, "kW": 1e3, "uW": 1e-6}
CLOCK_UNITS = {"MHz": 1.0, "GHz": 1e3, "kHz": 1e-3, "Hz": 1e-6}
MISSING = {"[N/A]", "N/A", "[Not Supported]", "Not Supported", ""}
ALIASES = {"clocks.current.sm": "clocks.sm", "clocks.current.memory": "clocks.mem",
           "clocks.current.graphics": "clocks.gr"}


def canonical(name):
    name = name.strip()
    if name.endswith("]") and " [" in name:
        name = name[:name.index(" [")]
    return ALIASES.get(name, name)


def quantity(cell, units):
    """'64.07 W' -> 64.07 (in W); None when missing."""
    if cell in MISSING:
        return None
    number, _, unit = cell.partition(" ")
    return float(number) * (units[unit] if unit else 1.0)


def read(path, use_strptime):
    date_cache = {}
    samples = 0
    last_time = -math.inf
    with open(path, newline="") as f:
        rows = csv.reader(f, skipinitialspace=True)
        names = [canonical(n) for n in next(rows)]
        t_col = names.index("timestamp")
        p_col = next(names.index(n) for n in ("power.draw.instant", "power.draw",
                                              "power.draw.average") if n in names)
        c_col = names.index("clocks.sm") if "clocks.sm" in names else None
        m_col = names.index("clocks.mem") if "clocks.mem" in names else None
        temp_col = names.index("temperature.gpu") if "temperature.gpu" in names else None
        for line, row in enumerate(rows, start=2):
            stamp = row[t_col]
            if use_strptime:
                d = datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f")
                t = calendar.timegm(d.timetuple()) + d.microsecond * 1e-6
            else:
                day = date_cache.get(stamp[:10])
                if day is None:
                    y, mo, d = int(stamp[0:4]), int(stamp[5:7]), int(stamp[8:10])
                    day = date_cache[stamp[:10]] = calendar.timegm((y, mo, d, 0, 0, 0))
                t = (day + int(stamp[11:13]) * 3600 + int(stamp[14:16]) * 60 +
                     int(stamp[17:19]) + float("0" + stamp[19:]))
            if t < last_time:
                sys.exit(f"{path}:{line}: time goes backwards")
            last_time = t
            power = quantity(row[p_col], POWER_UNITS)
            if power is None:
                continue
            f_core = quantity(row[c_col], CLOCK_UNITS) if c_col is not None else None
            f_mem = quantity(row[m_col], CLOCK_UNITS) if m_col is not None else None
            temp = quantity(row[temp_col], {"C": 1.0}) if temp_col is not None else None
            samples += 1
    return samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", help="nvidia-smi CSV log (e.g. written by ingest_bench)")
    parser.add_argument("--strptime", action="store_true",
                        help="also time the datetime.strptime version")
    args = parser.parse_args()
    size_mb = os.path.getsize(args.log) / 1e6
    modes = [False, True] if args.strptime else [False]
    for use_strptime in modes:
        start = time.process_time()
        samples = read(args.log, use_strptime)
        seconds = time.process_time() - start
        label = "csv + strptime" if use_strptime else "csv + sliced timestamps"
        print(f"python {sys.version.split()[0]} {label}: {size_mb / seconds:.1f} MB/s "
              f"({samples} samples, {size_mb:.0f} MB, {seconds:.2f} s CPU)")


if __name__ == "__main__":
    main()
