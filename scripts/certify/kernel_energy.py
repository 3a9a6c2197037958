#!/usr/bin/env python3
"""Certify a window's energy from an nvidia-smi log independently of wattcal (numpy only).

    python3 scripts/certify/kernel_energy.py LOG START END

LOG: an `nvidia-smi --query-gpu=timestamp,power.draw.instant,clocks.current.sm --format=csv`
log (e.g. ../shared/samples/nvidia-smi/h100_power-draw-instant_clocks-sm_lms.csv); START and END:
the window, "YYYY/MM/DD HH:MM:SS.ffff" as the log writes its timestamps. Prints, one per line,
the window's energy (trapezoids over the readings, the power at each edge interpolated linearly
between the readings around it), the readings inside, the mean power, the largest reading inside,
the coefficient of variation of the readings inside (population), and the SM clock held from
each reading to the next: its time-weighted mean and its range over the window. These are the
values KernelEnergy.RealH100WindowMatchesAnIndependentComputation (tests/kernel_energy_test.cc)
expects of wattcal's MeasureKernelEnergies.
"""
import csv
import sys
from datetime import datetime

import numpy as np


def seconds(text):
    t = datetime.strptime(text.strip(), "%Y/%m/%d %H:%M:%S.%f")
    return t.timestamp()


def number(text):
    return float(text.strip().split()[0])


def main():
    if len(sys.argv) != 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        rows = list(csv.reader(f))[1:]
    t = np.array([seconds(r[0]) for r in rows])
    p = np.array([number(r[1]) for r in rows])
    clock = np.array([number(r[2]) for r in rows])
    start, end = seconds(sys.argv[2]), seconds(sys.argv[3])
    inside = (t >= start) & (t <= end)
    edge = lambda x: np.interp(x, t, p)
    ts = np.concatenate(([start], t[inside], [end]))
    ps = np.concatenate(([edge(start)], p[inside], [edge(end)]))
    energy = float(np.sum((ps[1:] + ps[:-1]) / 2 * np.diff(ts)))
    duration = end - start
    # The clock holds each reading's value until the next reading.
    held_t = np.concatenate(([start], t[inside], [end]))
    before = np.searchsorted(t, start, side="right") - 1
    held_v = np.concatenate(([clock[before]], clock[inside]))
    f_mean = float(np.sum(held_v * np.diff(held_t)) / duration)
    readings = p[inside]
    print("energy_j %.10f" % energy)
    print("samples %d" % int(inside.sum()))
    print("mean_power_w %.10f" % (energy / duration))
    print("max_power_w %.2f" % readings.max())
    print("cv %.10f" % (readings.std() / readings.mean()))
    print("f_core_mhz %.10f" % f_mean)
    print("f_core_range_mhz %g-%g" % (held_v.min(), held_v.max()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
