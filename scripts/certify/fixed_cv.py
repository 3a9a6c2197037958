#!/usr/bin/env python3
"""Certify a fixed-clock 5-fold CV of wattcal independently (numpy + scipy only).

    python3 scripts/certify/fixed_cv.py RUN_DIR [--tolerance-w 1e-4]

RUN_DIR is a run of `make -f Makefile.runs gpu` (reports/h100, reports/h200, reports/h100-own):
its data/tidy/measured.csv (the tidy table wattcal-ingest wrote) and validation/cv/predictions.csv
(wattcal-validate --cv-folds 5, with each row's fold). For every fold this script refits TPDS Eq. 9 at the one V-F
pair, P = beta0 + sum_i omega_i U_i, by scipy.optimize.nnls on the training rows wattcal keeps
(no power_cap, clock_moved, sample_gap or data_toggle flag; the data_toggle rows are neither
trained on nor scored), predicts the held-out rows, caps them at the table's power limit, and
compares: every row's uncapped prediction with wattcal's (to --tolerance-w), and the MAPE with
validation/cv/metrics.json's. Exits 0 when they agree, 1 when not, 2 on bad input.
"""
import argparse
import csv
import json
import os
import sys

import numpy as np
from scipy.optimize import nnls

LEFT_OUT = {"power_cap", "clock_moved", "sample_gap", "data_toggle"}


def read_tidy(path):
    limit = float("nan")
    with open(path) as f:
        lines = [line for line in f]
    body = []
    for line in lines:
        if line.startswith("#"):
            for token in line[1:].split():
                if token.startswith("power_limit_w="):
                    limit = float(token.split("=", 1)[1])
            continue
        body.append(line)
    rows = list(csv.DictReader(body))
    components = [c for c in rows[0].keys() if c.startswith("core:") or c.startswith("mem:")]
    return rows, components, limit


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--tolerance-w", type=float, default=1e-4)
    a = ap.parse_args()
    try:
        rows, components, limit = read_tidy(os.path.join(a.run_dir, "data", "tidy", "measured.csv"))
        with open(os.path.join(a.run_dir, "validation", "cv", "predictions.csv")) as f:
            predictions = list(csv.DictReader(f))
        with open(os.path.join(a.run_dir, "validation", "cv", "metrics.json")) as f:
            metrics = json.load(f)
    except (OSError, KeyError, IndexError, ValueError) as e:
        print("fixed_cv.py: error: %s" % e, file=sys.stderr)
        return 2
    flags = {r["benchmark"]: set(filter(None, r.get("flags", "").split(";"))) for r in rows}
    by_name = {r["benchmark"]: r for r in rows}
    fold_of = {p["benchmark"]: int(p["fold"]) for p in predictions}
    u = {r["benchmark"]: np.array([float(r[c]) for c in components]) for r in rows}
    power = {r["benchmark"]: float(r["power_w"]) for r in rows}
    scored = [b for b in by_name if "data_toggle" not in flags[b]]
    if sorted(scored) != sorted(fold_of):
        print("fixed_cv.py: the scored rows differ from validation/cv/predictions.csv's", file=sys.stderr)
        return 1
    worst = 0.0
    apes = []
    for k in sorted(set(fold_of.values())):
        train = [b for b in scored if fold_of[b] != k and not (flags[b] & LEFT_OUT)]
        a_mat = np.array([np.concatenate(([1.0], u[b])) for b in train])
        beta, _ = nnls(a_mat, np.array([power[b] for b in train]), maxiter=50 * a_mat.shape[1])
        for p in predictions:
            if int(p["fold"]) != k:
                continue
            b = p["benchmark"]
            uncapped = beta[0] + u[b] @ beta[1:]
            worst = max(worst, abs(uncapped - float(p["uncapped_w"])))
            capped = min(uncapped, limit) if np.isfinite(limit) else uncapped
            apes.append(100.0 * abs(capped - power[b]) / power[b])
    mape = float(np.mean(apes))
    print("%s: %d folds, %d held-out rows; largest |uncapped difference| %.3g W; MAPE %.4f%% (wattcal %.4f%%)"
          % (a.run_dir, len(set(fold_of.values())), len(apes), worst, mape, metrics["mape_pct"]))
    ok = worst <= a.tolerance_w and abs(mape - metrics["mape_pct"]) <= 1e-5
    print("certified" if ok else "NOT certified")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
