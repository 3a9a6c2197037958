#!/usr/bin/env python3
"""The scipy stand-in of wattcal's joint DVFS calibration (issue 14), written as a competent
scipy user would: one scipy.optimize.least_squares call (trust-region reflective, the default
for bounds) on the joint model of TPDS Eqs. 4-6 with an analytic Jacobian, plain L2, absolute
residuals, coefficients >= 0, every voltage in [0.5, 2] and v = 1 at the default V-F pair.

  P = sum_k a0_k v_k + v_k^2 f_k (a1_k + sum_{i in k} g_i U_i)

Usage: scipy_calibrate.py TRAIN.csv [--repeat N]
Reads a gpmTOOL training file (line 1 domains, line 2 default MHz, line 3 components per
domain, line 4 names, then P,f_core,f_mem,U...). Prints the fit time of each repeat (the
file is read once, outside the timing), the final cost 0.5 sum r^2 and the training MAPE.
"""
import sys
import time

import numpy as np
from scipy.optimize import least_squares


def read_gpmtool(path):
    with open(path) as f:
        lines = f.read().splitlines()
    defaults = [float(v) for v in lines[1].split(",")]
    per_domain = [int(v) for v in lines[2].split(",")]
    data = np.loadtxt(lines[4:], delimiter=",", ndmin=2)
    return defaults, per_domain, data[:, 0], data[:, 1:3], data[:, 3:]


def fit(defaults, per_domain, p, f, u):
    n, nd = f.shape
    dom = np.repeat(np.arange(nd), per_domain)               # domain of each component
    levels = [np.unique(f[:, d]) for d in range(nd)]
    lvl = [np.searchsorted(levels[d], f[:, d]) for d in range(nd)]
    free = [np.flatnonzero(levels[d] != defaults[d]) for d in range(nd)]  # fitted voltages
    nx = 2 * nd + u.shape[1]
    nv = [len(fr) for fr in free]
    off = np.cumsum([nx] + nv)                               # start of each domain's voltages

    def volts(theta):
        v = []
        for d in range(nd):
            vd = np.ones(len(levels[d]))
            vd[free[d]] = theta[off[d]:off[d] + nv[d]]
            v.append(vd[lvl[d]])
        return v

    def parts(theta):
        x = theta[:nx]
        v = volts(theta)
        inner = [x[nd + d] + u[:, dom == d] @ x[2 * nd:][dom == d] for d in range(nd)]
        return x, v, inner

    def residuals(theta):
        x, v, inner = parts(theta)
        return sum(x[d] * v[d] + v[d] ** 2 * f[:, d] * inner[d] for d in range(nd)) - p

    def jacobian(theta):
        x, v, inner = parts(theta)
        jac = np.zeros((n, len(theta)))
        for d in range(nd):
            jac[:, d] = v[d]
            jac[:, nd + d] = v[d] ** 2 * f[:, d]
            jac[:, 2 * nd + np.flatnonzero(dom == d)] = (v[d] ** 2 * f[:, d])[:, None] * u[:, dom == d]
            dp_dv = x[d] + 2.0 * v[d] * f[:, d] * inner[d]
            for k, j in enumerate(free[d]):
                rows = lvl[d] == j
                jac[rows, off[d] + k] = dp_dv[rows]
        return jac

    # Start: every voltage 1, coefficients by linear least squares at those voltages (clipped).
    theta0 = np.ones(off[-1])
    theta0[:nx] = np.clip(np.linalg.lstsq(jacobian(theta0)[:, :nx], p, rcond=None)[0], 1e-6, None)
    lower = np.r_[np.zeros(nx), np.full(off[-1] - nx, 0.5)]
    upper = np.r_[np.full(nx, np.inf), np.full(off[-1] - nx, 2.0)]
    res = least_squares(residuals, theta0, jac=jacobian, bounds=(lower, upper), x_scale="jac")
    return res


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 1
    defaults, per_domain, p, f, u = read_gpmtool(sys.argv[1])
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        res = fit(defaults, per_domain, p, f, u)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        mape = 100.0 * np.mean(np.abs(res.fun) / p)
        print(f"scipy_fit_s {dt:.4f} cpu_s {cpu:.4f} cost {res.cost:.6g} nfev {res.nfev} njev {res.njev} "
              f"train_mape_pct {mape:.4f} status {res.status}")


if __name__ == "__main__":
    main()
