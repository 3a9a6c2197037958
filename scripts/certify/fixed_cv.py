#!/usr/bin/env python3
"""Certify a fixed-clock 5-fold CV of wattcal from the raw capture files (numpy + scipy only).

    python3 scripts/certify/fixed_cv.py RUN_DIR --gpu DESCRIPTION.json --capture DIR [--capture DIR ...]
                                        [--settle-ms 300] [--tolerance-w 1e-4]

RUN_DIR is a run of `make -f Makefile.runs gpu` (reports/h100, reports/h200, reports/h100-own) made
from the capture directories DIR (in the order the run gave them) and the GPU description. Nothing
wattcal computed is read as an input: the measured table is rebuilt here from what the measuring
tools wrote (docs/ingest.md, "Capture directories"), then the cross-validation is redone on it.

  power       per benchmark window of windows.csv, measured from --settle-ms after its start (a
              window shorter than twice that from its middle): NVML's cumulative energy counter
              (linear between its change points, each midway between the last reading of the old
              value and the first of the new; extrapolated from the nearest segment), over the
              window's length. The counter is not believed, and the trapezoid of the instant power
              (interpolated at the edges) gives the power, when the two differ by more than 10%
              or when the counter was frozen during the window: one value held for longer than
              max(1 s, 10 x the log's typical hold) while the power read more than 1 W. Without
              a counter, the instant power's trapezoid.
  flags       clock_moved: a core or memory clock in force during the window ranging over more
              than 1% of its largest value; power_cap: the SW power cap (0x4) among the clock
              event reasons in force (nvidia_smi_power.csv when it covers every window, else the
              NVML log's column); sample_gap: two readings more than max(5 typical periods,
              50 ms) apart inside the window or across an edge (the period: the median of the
              log's first 64 gaps); data_toggle: a toggle sweep window of a wattcal-capture suite
              whose share of toggling bits (toggle_<unit>_<pct>) is not the suite's (50% random,
              0% zeros; capture.json, random without one); metric_absent: a window whose export
              lacks an optional component's metric that other exports have (counted 0).
  counters    ncu_raw.csv, one launch per window in order after the leading set-up launches (the
              launch configurations must match: Grid Size x Block Size against blocks, threads);
              utilisations by TPDS Eqs. 7-8 from the description (compute: thread counts + warp
              size x warp counts over active cycles per SM x SMs x units per SM; bandwidth: bytes
              + bytes per access x accesses over the duration and the peak), units from the
              export's unit row (a negative count is an error). An optional component whose metric
              no export has is left out.

For every fold of RUN_DIR/validation/cv/predictions.csv (wattcal-validate --cv-folds 5: each
row's fold) TPDS Eq. 9, P = beta0 + sum_i omega_i U_i, is refitted by scipy.optimize.nnls on the
fold's training rows (not flagged power_cap, clock_moved, sample_gap, data_toggle or
metric_absent; data_toggle rows are neither trained on nor scored), the held-out rows are
predicted and capped at the lowest power limit in force (power.limit / power_limit_mw).
Certified when every row's uncapped prediction agrees with wattcal's to --tolerance-w and the MAPE
with validation/cv/metrics.json's to 1e-5 points. Where they do not, the rows of
RUN_DIR/data/tidy/measured.csv that differ from the table rebuilt here are named (read only to
explain a difference). Exits 0 when certified, 1 when not, 2 on bad input.
"""
import argparse
import calendar
import csv
import json
import math
import os
import re
import sys
import time

import numpy as np
from scipy.optimize import nnls

LEFT_OUT = {"power_cap", "clock_moved", "sample_gap", "data_toggle", "metric_absent"}
REASON_SW_POWER_CAP = 0x4
CLOCK_RANGE_FRAC = 0.01
MISMATCH_FRAC = 0.10
GAP_PERIODS, GAP_MIN_S, PERIOD_GAPS = 5.0, 0.05, 64
FROZEN_MIN_S, FROZEN_HOLDS, FROZEN_MIN_POWER_W = 1.0, 10.0, 1.0


class BadInput(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Power logs: a list of readings, time-ordered, as numpy arrays (NaN where a column is absent).

def nvml_log(path):
    """nvml_power.csv: timestamp_us, power_instant_mw / power_mw, energy_mj, clocks, reasons, limit."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise BadInput("%s: no readings" % path)

    def column(name, scale):
        if name not in rows[0]:
            return np.full(len(rows), np.nan)
        return np.array([float(r[name]) * scale if r[name] not in ("", "nan", "NaN") else np.nan
                         for r in rows])
    power = column("power_instant_mw", 1e-3)
    instant = not np.all(np.isnan(power))
    if not instant:
        power = column("power_mw", 1e-3)
    reasons = None
    if "clocks_event_reasons" in rows[0]:
        reasons = np.array([int(r["clocks_event_reasons"], 16) for r in rows], dtype=np.int64)
    return {"path": path, "t": np.array([int(r["timestamp_us"]) / 1e6 for r in rows]),
            "power_w": power, "instant": instant, "energy_j": column("energy_mj", 1e-3),
            "core_mhz": column("sm_clock_mhz", 1.0), "mem_mhz": column("mem_clock_mhz", 1.0),
            "reasons": reasons, "limit_w": column("power_limit_mw", 1e-3)}


def smi_number(cell):
    cell = cell.strip()
    if cell.startswith("[") or cell == "":
        return np.nan
    return float(cell.split()[0])


def smi_log(path):
    """nvidia_smi_power.csv (--format=csv): UTC timestamps, values with their units."""
    with open(path, newline="") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    header = [h.strip() for h in lines[0].split(",")]
    col = {h.split(" [")[0]: i for i, h in enumerate(header)}
    power_key = "power.draw.instant" if "power.draw.instant" in col else "power.draw"
    t, power, core, mem, reasons, limit = [], [], [], [], [], []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split(",")]
        if cells[0] == "timestamp":
            continue  # a header repeated by an appended run
        stamp, _, frac = cells[col["timestamp"]].partition(".")
        t.append(calendar.timegm(time.strptime(stamp, "%Y/%m/%d %H:%M:%S")) + float("0." + (frac or "0")))
        power.append(smi_number(cells[col[power_key]]) if power_key in col else np.nan)
        core.append(smi_number(cells[col["clocks.current.sm"]]) if "clocks.current.sm" in col else np.nan)
        mem.append(smi_number(cells[col["clocks.current.memory"]]) if "clocks.current.memory" in col else np.nan)
        limit.append(smi_number(cells[col["power.limit"]]) if "power.limit" in col else np.nan)
        key = "clocks_event_reasons.active"
        reasons.append(int(cells[col[key]], 16) if key in col and cells[col[key]].startswith("0x") else 0)
    return {"path": path, "t": np.array(t), "power_w": np.array(power), "instant": power_key == "power.draw.instant",
            "energy_j": np.full(len(t), np.nan), "core_mhz": np.array(core), "mem_mhz": np.array(mem),
            "reasons": np.array(reasons, dtype=np.int64) if "clocks_event_reasons.active" in col else None,
            "limit_w": np.array(limit)}


def in_force(log, key, start, end):
    """The values of a step function in force during [start, end]: the reading at or before the
    start and those inside."""
    t = log["t"]
    first = max(int(np.searchsorted(t, start, side="right")) - 1, 0)
    last = int(np.searchsorted(t, end, side="left"))
    values = log[key][first:max(last, first + 1)]
    return values[~np.isnan(values)] if values.dtype.kind == "f" else values


def trapezoid_j(log, start, end):
    """The MTSM integral of the piecewise-linear power over [start, end], edges interpolated."""
    ok = ~np.isnan(log["power_w"])
    t, p = log["t"][ok], log["power_w"][ok]
    inside = (t > start) & (t < end)
    x = np.concatenate(([start], t[inside], [end]))
    y = np.interp(x, t, p)
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2.0))


def counter_knots(log):
    """The energy counter's change points: (time, value), each midway between the last reading of
    the old value and the first of the new; and its holds (start, end) between changes."""
    t, e = log["t"], log["energy_j"]
    ok = ~np.isnan(e)
    t, e = t[ok], e[ok]
    knots, holds = [], []
    last_time, hold_start = t[0], t[0]
    for i in range(1, len(t)):
        if e[i] != e[i - 1]:
            if e[i] < e[i - 1]:
                raise BadInput("%s: the energy counter goes backwards at reading %d" % (log["path"], i + 2))
            mid = 0.5 * (last_time + t[i])
            if knots and not mid > knots[-1][0]:
                knots[-1] = (knots[-1][0], e[i])
            else:
                knots.append((mid, e[i]))
            holds.append((hold_start, t[i]))
            hold_start = t[i]
        last_time = t[i]
    holds.append((hold_start, t[-1]))  # the value the log ends on
    return knots, holds


def counter_at(knots, when):
    times = [k[0] for k in knots]
    i = int(np.searchsorted(times, when, side="left"))
    i = min(max(i, 1), len(knots) - 1)
    (ta, ea), (tb, eb) = knots[i - 1], knots[i]
    return ea + (eb - ea) * (when - ta) / (tb - ta)


def frozen_during(log, holds, start, end):
    """Whether the counter held one value for longer than max(1 s, 10 typical holds) over a part of
    [start, end] while the power read more than 1 W."""
    if not holds:
        return False
    lengths = sorted(h[1] - h[0] for h in holds[:PERIOD_GAPS])
    limit = max(FROZEN_MIN_S, FROZEN_HOLDS * lengths[len(lengths) // 2])
    for a, b in holds:
        if b - a > limit and a < end and b > start:
            lo, hi = max(a, start), min(b, end)
            if hi > lo and trapezoid_j(log, lo, hi) / (hi - lo) > FROZEN_MIN_POWER_W:
                return True
    return False


def gap_limit(log):
    t = log["t"][~np.isnan(log["power_w"])]
    gaps = [g for g in np.diff(t) if g > 0.0][:PERIOD_GAPS]
    return max(GAP_PERIODS * sorted(gaps)[len(gaps) // 2], GAP_MIN_S) if gaps else math.inf


# ---------------------------------------------------------------------------------------------
# Counters: the raw page's launches, their metrics in base units.

SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 1024.0, "Mi": 1024.0 ** 2, "Gi": 1024.0 ** 3}
TIME = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
        "s": 1.0, "second": 1.0}


def unit_scale(unit, role, where):
    if role == "time":
        if unit not in TIME:
            raise BadInput("%s: unit '%s' is not a time" % (where, unit))
        return TIME[unit]
    m = re.fullmatch(r"(Ki|Mi|Gi|K|M|G|T)?(byte|B)", unit) if role == "bytes" else \
        re.fullmatch(r"(K|M|G)?(cycle|inst|warp|thread|sector|request)?", unit)
    if not m:
        raise BadInput("%s: unit '%s' is not %s" % (where, unit, "bytes" if role == "bytes" else "a count"))
    return SI[m.group(1) or ""]


def raw_page(path):
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        raise BadInput("%s: no raw page header" % path)
    rows = list(csv.reader(lines[start:]))
    header, units = rows[0], rows[1]
    return [dict(zip(header, r)) for r in rows[2:] if len(r) == len(header)], dict(zip(header, units))


def dims(cell):
    return int(np.prod([int(v) for v in re.findall(r"\d+", cell)]))


def metric_roles(gpu):
    roles = {gpu["active_cycles_metric"]: "count", gpu["duration_metric"]: "time"}
    for c in gpu["components"]:
        for key, role in (("thread_metrics", "count"), ("warp_metrics", "count"),
                          ("access_metrics", "count"), ("byte_metrics", "bytes")):
            for m in c.get(key, []):
                roles[m] = role
    return roles


def utilisation(c, gpu, launch):
    if c["kind"] == "compute":
        ops = sum(launch[m] for m in c.get("thread_metrics", [])) + \
            gpu["warp_size"] * sum(launch[m] for m in c.get("warp_metrics", []))
        return ops / (launch[gpu["active_cycles_metric"]] * gpu["sm_count"] * c["units_per_sm"])
    moved = sum(launch[m] for m in c.get("byte_metrics", [])) + \
        c.get("bytes_per_access", 0) * sum(launch[m] for m in c.get("access_metrics", []))
    return moved / launch[gpu["duration_metric"]] / c["peak_bytes_per_s"]


# ---------------------------------------------------------------------------------------------
# One capture directory -> rows {benchmark, power_w, flags, util: {component: U}, limit_w}.

def read_windows(path, settle_s):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    windows = []
    for line, r in enumerate(rows, start=2):
        start, end = int(r["start_us"]) / 1e6, int(r["end_us"]) / 1e6
        d = end - start
        start += 0.5 * d if not d >= 2.0 * settle_s else settle_s
        windows.append({"name": r["kernel"], "line": line, "start": start, "end": end,
                        "blocks": int(r.get("blocks") or 0), "threads": int(r.get("threads") or 0)})
    return windows


def suite_toggle_pct(directory):
    """50 (random data) or 0 (zeros) for a wattcal-capture suite, -1 for another capture. Without
    capture.json, wattcal-capture's default: random data."""
    path = os.path.join(directory, "capture.json")
    if not os.path.exists(path):
        return 50
    try:
        with open(path) as f:
            meta = json.load(f)
    except ValueError as e:
        raise BadInput("%s: not JSON (%s)" % (path, e))
    if not isinstance(meta, dict) or meta.get("format") != "wattcal-capture" or "kind" in meta:
        return -1
    return 0 if meta.get("options", {}).get("data", "random") == "zeros" else 50


def measure(directory, windows):
    nvml = os.path.join(directory, "nvml_power.csv")
    smi = os.path.join(directory, "nvidia_smi_power.csv")
    primary = nvml_log(nvml) if os.path.exists(nvml) else smi_log(smi)
    secondary = smi_log(smi) if os.path.exists(nvml) and os.path.exists(smi) else None
    if secondary is not None and not (secondary["t"][0] <= min(w["start"] for w in windows) and
                                      secondary["t"][-1] >= max(w["end"] for w in windows)):
        secondary = None  # it does not cover every window: left out, as wattcal does
    reasons_log = secondary if secondary is not None and secondary["reasons"] is not None else primary
    limit_log = secondary if secondary is not None and not np.all(np.isnan(secondary["limit_w"])) else primary
    has_counter = not np.all(np.isnan(primary["energy_j"]))
    knots, holds = counter_knots(primary) if has_counter else ([], [])
    has_counter = len(knots) >= 2
    limit_s = gap_limit(primary)
    t_power = primary["t"][~np.isnan(primary["power_w"])]
    for w in windows:
        s, e = w["start"], w["end"]
        trap = trapezoid_j(primary, s, e)
        power, source = trap / (e - s), "instant_power" if primary["instant"] else "averaged_power"
        if has_counter:
            counter = (counter_at(knots, e) - counter_at(knots, s)) / (e - s)
            samples = int(np.sum((t_power >= s) & (t_power <= e)))
            if trap > 0.0 and samples >= 2 and (abs(counter * (e - s) - trap) > MISMATCH_FRAC * trap
                                                or frozen_during(primary, holds, s, e)):
                source = "instant_power (counter not believed)"
            else:
                power, source = counter, "energy_counter"
        flags = set()
        for key in ("core_mhz", "mem_mhz"):
            clocks = in_force(primary, key, s, e)
            if clocks.size and (clocks.max() - clocks.min()) > CLOCK_RANGE_FRAC * clocks.max():
                flags.add("clock_moved")
        if reasons_log["reasons"] is not None:
            mask = int(np.bitwise_or.reduce(in_force(reasons_log, "reasons", s, e)))
            if mask & REASON_SW_POWER_CAP:
                flags.add("power_cap")
        before = max(int(np.searchsorted(t_power, s, side="right")) - 1, 0)
        after = min(int(np.searchsorted(t_power, e, side="left")), len(t_power) - 1)
        if after > before and np.max(np.diff(t_power[before:after + 1])) > limit_s:
            flags.add("sample_gap")
        limits = in_force(limit_log, "limit_w", s, e)
        w.update(power_w=power, source=source, flags=flags,
                 limit_w=float(limits.min()) if limits.size else math.nan)


def join_counters(directory, windows, gpu, roles):
    path = os.path.join(directory, "ncu_raw.csv")
    launches, units = raw_page(path)
    first = (windows[0]["blocks"], windows[0]["threads"])
    while launches and first[0] and (dims(launches[0]["Grid Size"]), dims(launches[0]["Block Size"])) != first:
        launches.pop(0)  # a set-up kernel (k_fill_random) before the first benchmark
    if len(launches) != len(windows):
        raise BadInput("%s: %d launches for %d windows" % (path, len(launches), len(windows)))
    for w, launch in zip(windows, launches):
        config = (dims(launch["Grid Size"]), dims(launch["Block Size"]))
        if w["blocks"] and config != (w["blocks"], w["threads"]):
            raise BadInput("%s: launch of %s has grid x block %s, window %s (line %d) %s"
                           % (path, launch["Kernel Name"], config, w["name"], w["line"], (w["blocks"], w["threads"])))
        values, absent = {}, set()
        for metric, role in roles.items():
            cell = launch.get(metric, "n/a").strip()
            if cell in ("n/a", ""):
                absent.add(metric)
                continue
            values[metric] = float(cell.replace(",", "")) * unit_scale(units[metric], role, "%s: %s" % (path, metric))
            if values[metric] < 0.0:
                raise BadInput("%s: %s of %s is negative" % (path, metric, w["name"]))
        w["counters"], w["absent"] = values, absent


def capture_rows(directory, gpu, roles, settle_s):
    windows = read_windows(os.path.join(directory, "windows.csv"), settle_s)
    measure(directory, windows)
    pct = suite_toggle_pct(directory)
    for w in windows:
        m = re.fullmatch(r"toggle_.+_([0-9]{3})(_b[0-9]+)?", w["name"])
        if pct >= 0 and m and int(m.group(1)) != pct:
            w["flags"].add("data_toggle")
    join_counters(directory, windows, gpu, roles)
    return windows


def rebuild_table(captures, gpu, settle_s):
    roles = metric_roles(gpu)
    rows = []
    for directory in captures:
        rows += capture_rows(directory, gpu, roles, settle_s)
    components = []
    for c in gpu["components"]:
        metrics = [m for key in ("thread_metrics", "warp_metrics", "byte_metrics", "access_metrics")
                   for m in c.get(key, [])]
        lacking = [w for w in rows if any(m in w["absent"] for m in metrics)]
        if lacking and not c.get("optional"):
            raise BadInput("component %s: a metric is absent from the counters of %s"
                           % (c["component"], lacking[0]["name"]))
        if len(lacking) == len(rows):
            continue  # an optional component no export has is left out
        for w in lacking:  # counted 0 where an export lacks it, and not trained on
            w["flags"].add("metric_absent")
            w["counters"].update({m: 0.0 for m in metrics if m in w["absent"]})
        components.append(c)
    for w in rows:
        w["util"] = {c["component"]: utilisation(c, gpu, w["counters"]) for c in components}
    limits = [w["limit_w"] for w in rows if not math.isnan(w["limit_w"])]
    return rows, [c["component"] for c in components], min(limits) if limits else math.nan


# ---------------------------------------------------------------------------------------------

def read_tidy(path):
    """wattcal's measured table, read only to name the rows that differ from the rebuilt one."""
    with open(path) as f:
        body = [line for line in f if not line.startswith("#")]
    return {r["benchmark"]: r for r in csv.DictReader(body)}


def explain(rows, components, tidy_path, out):
    try:
        tidy = read_tidy(tidy_path)
    except OSError:
        return
    named = 0
    for w in rows:
        t = tidy.get(w["name"])
        if t is None:
            out.append("  %s: not in %s" % (w["name"], tidy_path))
            named += 1
            continue
        notes = []
        if abs(float(t["power_w"]) - w["power_w"]) > 1e-6 * w["power_w"]:
            notes.append("power %.6f W from the raw files (%s), %s W in the table" % (w["power_w"], w["source"], t["power_w"]))
        flags = set(filter(None, t.get("flags", "").split(";")))
        if flags & LEFT_OUT != w["flags"]:
            notes.append("flags %s from the raw files, %s in the table" % (sorted(w["flags"]), sorted(flags & LEFT_OUT)))
        for c in components:
            key = next((k for k in t if k.endswith(":" + c)), None)
            if key is None or abs(float(t[key]) - w["util"][c]) > 1e-9 * max(1.0, abs(w["util"][c])):
                notes.append("U[%s] %.9g from the raw files, %s in the table" % (c, w["util"][c], t.get(key)))
        if notes:
            out.append("  %s (%s): %s" % (w["name"], tidy_path, "; ".join(notes)))
            named += 1
        if named >= 20:
            out.append("  ...")
            return


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--capture", action="append", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--settle-ms", type=float, default=300.0)
    ap.add_argument("--tolerance-w", type=float, default=1e-4)
    a = ap.parse_args()
    try:
        with open(a.gpu) as f:
            gpu = json.load(f)
        rows, components, limit = rebuild_table(a.capture, gpu, a.settle_ms * 1e-3)
        with open(os.path.join(a.run_dir, "validation", "cv", "predictions.csv")) as f:
            predictions = list(csv.DictReader(f))
        with open(os.path.join(a.run_dir, "validation", "cv", "metrics.json")) as f:
            metrics = json.load(f)
    except (OSError, KeyError, IndexError, ValueError, BadInput) as e:
        print("fixed_cv.py: error: %s" % e, file=sys.stderr)
        return 2
    by_name = {w["name"]: w for w in rows}
    if len(by_name) != len(rows):
        print("fixed_cv.py: a benchmark name repeats across the captures", file=sys.stderr)
        return 2
    fold_of = {p["benchmark"]: int(p["fold"]) for p in predictions}
    scored = [w["name"] for w in rows if "data_toggle" not in w["flags"]]
    u = {w["name"]: np.array([w["util"][c] for c in components]) for w in rows}
    power = {w["name"]: w["power_w"] for w in rows}
    notes = []
    ok = sorted(scored) == sorted(fold_of)
    if not ok:
        notes.append("  the scored rows differ from validation/cv/predictions.csv's: %s"
                     % sorted(set(scored) ^ set(fold_of))[:10])
    worst, worst_row, apes = 0.0, "", []
    for k in sorted(set(fold_of.values())) if ok else []:
        train = [b for b in scored if fold_of[b] != k and not (by_name[b]["flags"] & LEFT_OUT)]
        a_mat = np.array([np.concatenate(([1.0], u[b])) for b in train])
        beta, _ = nnls(a_mat, np.array([power[b] for b in train]), maxiter=50 * a_mat.shape[1])
        for p in predictions:
            if int(p["fold"]) != k:
                continue
            b = p["benchmark"]
            uncapped = beta[0] + u[b] @ beta[1:]
            if abs(uncapped - float(p["uncapped_w"])) > worst:
                worst, worst_row = abs(uncapped - float(p["uncapped_w"])), b
            capped = min(uncapped, limit) if np.isfinite(limit) else uncapped
            apes.append(100.0 * abs(capped - power[b]) / power[b])
    mape = float(np.mean(apes)) if apes else math.nan
    print("%s: %d windows rebuilt from %s (%d components, power limit %g W); %d folds, %d held-out "
          "rows; largest |uncapped difference| %.3g W (%s); MAPE %.4f%% (wattcal %.4f%%)"
          % (a.run_dir, len(rows), " + ".join(a.capture), len(components), limit,
             len(set(fold_of.values())), len(apes), worst, worst_row or "-", mape, metrics["mape_pct"]))
    ok = ok and worst <= a.tolerance_w and abs(mape - metrics["mape_pct"]) <= 1e-5
    if not ok:
        explain(rows, components, os.path.join(a.run_dir, "data", "tidy", "measured.csv"), notes)
        print("\n".join(notes))
    print("certified" if ok else "NOT certified")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
