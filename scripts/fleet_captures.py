#!/usr/bin/env python3
"""Simulated fleet captures made from one real suite capture (wattcal-capture --out): N GPUs of
one model, each a copy of the suite whose power differs by a known amount, for the fleet reduce's
tests and its scale benchmark (bench/scale_fleet.sh; docs/fleet.md).

Each GPU k gets power P_k(t) = scale_k * P(t) + offset_k: every term of TPDS Eq. 9 scales by
scale_k, and the constant term and the idle power move by offset_k as well (b0_k = scale_k * b0 +
offset_k). The energy counter follows: E_k(t) = scale_k * E(t) + offset_k * (t - t0).

  OUT/<uuid>/capture.json     the suite's, with the GPU's new UUID
  OUT/<uuid>/nvml_power.csv   power_mw, power_instant_mw and energy_mj transformed
  OUT/<uuid>/windows.csv, idle_windows.csv, profile_plan.csv   links to the suite's
  OUT/<uuid>/ncu_raw.csv      a link to the suite's, for the first --with-counters GPUs only:
                              the others borrow them in the reduce (one GPU per model profiled)
  OUT/truth.csv               uuid,scale,offset_w of every GPU
  OUT/captures.txt            the directories, one a line (wattcal-fleet --captures-from)

  fleet_captures.py SUITE_DIR OUT_DIR N [--seed 1] [--with-counters 1]
                    [--scale-sd 0.03] [--offset-sd-w 6] [--scales S,S,...] [--offsets-w W,W,...]
--scales/--offsets-w give each GPU's values exactly (N of each) instead of drawing them.
"""

import argparse
import json
import os
import random
import sys


def fail(message):
    print("fleet_captures.py: " + message, file=sys.stderr)
    sys.exit(2)


def transform_power(src, dst, scale, offset_w):
    with open(src) as f, open(dst, "w") as out:
        header = f.readline()
        names = header.strip().split(",")
        out.write(header)
        try:
            t_col = names.index("timestamp_us")
        except ValueError:
            fail(src + ": no timestamp_us column")
        power_cols = [names.index(c) for c in ("power_mw", "power_instant_mw") if c in names]
        e_col = names.index("energy_mj") if "energy_mj" in names else -1
        t0 = None
        last_e, since = None, None  # the counter's value and when it took it
        for line in f:
            cells = line.rstrip("\n").split(",")
            t = int(cells[t_col])
            if t0 is None:
                t0 = t
            for c in power_cols:
                if cells[c] not in ("", "N/A"):
                    cells[c] = str(int(round(scale * int(cells[c]) + offset_w * 1000.0)))
            if e_col >= 0 and cells[e_col] not in ("", "N/A"):
                # The counter steps when the driver updates it and holds between: the offset's
                # energy is added at its steps only (mJ = W * us / 1000), so it never goes back.
                e = int(cells[e_col])
                if e != last_e:
                    last_e, since = e, t
                cells[e_col] = str(int(round(scale * e + offset_w * (since - t0) / 1000.0)))
            out.write(",".join(cells) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("suite")
    p.add_argument("out")
    p.add_argument("n", type=int)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--with-counters", type=int, default=1)
    p.add_argument("--scale-sd", type=float, default=0.03)
    p.add_argument("--offset-sd-w", type=float, default=6.0)
    p.add_argument("--scales", default="")
    p.add_argument("--offsets-w", default="")
    a = p.parse_args()
    suite = os.path.abspath(a.suite)
    for name in ("capture.json", "windows.csv", "nvml_power.csv", "ncu_raw.csv"):
        if not os.path.isfile(os.path.join(suite, name)):
            fail("%s has no %s: give a wattcal-capture suite with counters" % (suite, name))
    rng = random.Random(a.seed)
    scales = [float(x) for x in a.scales.split(",")] if a.scales else None
    offsets = [float(x) for x in a.offsets_w.split(",")] if a.offsets_w else None
    if (scales and len(scales) != a.n) or (offsets and len(offsets) != a.n):
        fail("--scales and --offsets-w need %d values each" % a.n)
    base = json.load(open(os.path.join(suite, "capture.json")))
    os.makedirs(a.out, exist_ok=True)
    truth = ["uuid,scale,offset_w"]
    dirs = []
    for k in range(a.n):
        scale = scales[k] if scales else 1.0 + rng.gauss(0.0, a.scale_sd)
        offset = offsets[k] if offsets else rng.gauss(0.0, a.offset_sd_w)
        uuid = "GPU-f1ee7000-0000-0000-0000-%012d" % k
        d = os.path.join(a.out, uuid)
        os.makedirs(d, exist_ok=True)
        j = json.loads(json.dumps(base))
        j["gpu"]["uuid"] = uuid
        j["options"]["counters"] = k < a.with_counters
        with open(os.path.join(d, "capture.json"), "w") as f:
            json.dump(j, f, indent=2)
            f.write("\n")
        links = ["windows.csv", "idle_windows.csv", "profile_plan.csv"]
        if k < a.with_counters:
            links.append("ncu_raw.csv")
        for name in links:
            src = os.path.join(suite, name)
            if os.path.isfile(src) and not os.path.lexists(os.path.join(d, name)):
                os.symlink(src, os.path.join(d, name))
        transform_power(os.path.join(suite, "nvml_power.csv"), os.path.join(d, "nvml_power.csv"),
                        scale, offset)
        truth.append("%s,%.6f,%.6f" % (uuid, scale, offset))
        dirs.append(d)
    with open(os.path.join(a.out, "truth.csv"), "w") as f:
        f.write("\n".join(truth) + "\n")
    with open(os.path.join(a.out, "captures.txt"), "w") as f:
        f.write("\n".join(dirs) + "\n")


if __name__ == "__main__":
    main()
