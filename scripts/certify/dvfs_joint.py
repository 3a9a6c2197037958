#!/usr/bin/env python3
"""Certify wattcal's joint DVFS optimum independently (numpy + scipy only).

    python3 scripts/certify/dvfs_joint.py RUN_DIR [--starts N] [--tolerance-rel 1e-8]

RUN_DIR is a run of `make -f Makefile.runs titanx` (reports/titanx): its model/model.json (what
`wattcal-calibrate` wrote: trained_on, the layout, the voltages, the coefficients, the loss, the
final cost) and validation/dvfs/metrics.json (wattcal-validate --mode dvfs: the held-out file and
its MAPE).

The script reads the gpmTOOL training file itself (4-line header: domains; default frequencies;
components per domain; names; then P,f_core,f_mem,U... rows) and fits the cross-domain DVFS model
of SPEC.md "Models" (TPDS Eqs. 4-6)

    P = a0 v_c + v_c^2 f_c (a1 + sum_i g_i U_i) + a2 v_m + v_m^2 f_m (a3 + g_m U_m)

by scipy.optimize.least_squares (trust-region reflective, analytic Jacobian) with the residual
and robust loss the model file names (absolute/relative; l2/huber/cauchy and its scale: scipy's
`loss`/`f_scale` give the same 0.5 sum rho as Ceres). Unknowns: the coefficients (box: >= 0) and
one voltage per frequency level (v = 1 at the default level), monotone through non-negative
increments, each a fraction s in [0, 1] of the room left to the bound: above the default
v_j = v_{j-1} + s_j (v_max - v_{j-1}), below it v_j = v_{j+1} - s_j (v_{j+1} - v_min), with
v_min = 0.5 and v_max = 2 (wattcal's CalibrationOptions defaults). So the feasible set is
wattcal's; the parsing, the model, the loss, the solver and the starts are not.

Starts: the cold one (v = 1, coefficients by scipy.optimize.nnls), wattcal's own optimum (is it a
local minimum for another solver?), and N - 2 seeded random monotone voltage curves (coefficients
by NNLS at those voltages). The best of them is compared with wattcal's model:

  - wattcal's objective recomputed here equals model.json's final_cost (relative 1e-9) and
    wattcal's model scored here on the held-out file equals validation/dvfs/metrics.json's MAPE (1e-9
    points): the same numbers computed twice;
  - no start reaches a lower objective than wattcal's by more than --tolerance-rel (relative):
    wattcal did not stop at a local optimum or short of one;
  - at the same objective, the coefficients (--tolerance-coef-rel, relative), the voltages
    (--tolerance-v) and the held-out MAPE (--tolerance-mape-pct, points) agree.
Measured on the Titan X (scripts/certify/README.md; 11 and 7 components): every start ends
0.8-1.1e-10 below wattcal's objective (Ceres stops at |cost change|/cost <= 1e-10), coefficients
within 4.4e-5, voltages within 3.3e-6, MAPE within 2.6e-5 points; the tolerances are 20 to 100
times those, and far below what a fit stopped short moves (5 iterations: objective 4.0e-3 higher,
coefficients 0.2, voltages 4.5e-3).

Exits 0 when certified, 1 when not, 2 on bad input.
"""
import argparse
import json
import os
import sys
import time

# One BLAS thread: the problem is small (6528 x 34), and on a loaded two-core machine OpenBLAS's
# spinning threads made each SVD of scipy's trust-region step take 0.8 s instead of 10 ms.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402 (after the thread settings)
from scipy.optimize import least_squares, nnls  # noqa: E402

V_MIN, V_MAX = 0.5, 2.0
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def resolve(path):
    """A path as written into a model file: absolute, relative to the working directory or to
    the repository root (Makefile.runs' default DATASETS=../shared/datasets)."""
    for candidate in (path, os.path.join(REPO, path)):
        if os.path.exists(candidate):
            return candidate
    raise OSError("not found: %s" % path)


def read_gpmtool(path):
    """(names, defaults, components per domain, power, freq [rows x 2], util, benchmark names)."""
    with open(path) as f:
        lines = [line.strip() for line in f if line.strip()]
    num_domains = int(lines[0])
    if num_domains != 2:
        raise ValueError("%s: %d domains; this script knows core + memory" % (path, num_domains))
    defaults = [float(x) for x in lines[1].split(",")]
    per_domain = [int(x) for x in lines[2].split(",")]
    names = lines[3].split(",")
    n = sum(per_domain)
    if len(names) != n:
        raise ValueError("%s: %d names for %d components" % (path, len(names), n))
    rows = [line.split(",") for line in lines[4:]]
    named = len(rows[0]) == 1 + 1 + num_domains + n
    bench = [r[0] for r in rows] if named else None
    values = np.array([[float(x) for x in (r[1:] if named else r)] for r in rows])
    if values.shape[1] != 1 + num_domains + n:
        raise ValueError("%s: %d fields per row, expected %d" % (path, values.shape[1], 1 + num_domains + n))
    return names, defaults, per_domain, values[:, 0], values[:, 1:1 + num_domains], values[:, 1 + num_domains:], bench


class Problem:
    """The DVFS model over one training file: parameters x = [a0_c, a0_m, a1_c, a1_m, g_1..g_n,
    s_core (levels - 1), s_mem (levels - 1)], coefficients in gpmTOOL's (and model.json's) order."""

    def __init__(self, power, freq, util, defaults, per_domain, residual, loss, loss_scale):
        self.power, self.freq, self.util = power, freq, util
        self.domain_of = np.repeat(np.arange(2), per_domain)
        self.levels = [np.unique(freq[:, d]) for d in range(2)]
        self.default_level = []
        for d in range(2):
            hit = np.flatnonzero(self.levels[d] == defaults[d])
            if hit.size != 1:
                raise ValueError("default frequency %g MHz of domain %d has no rows" % (defaults[d], d))
            self.default_level.append(int(hit[0]))
        self.level_of_row = [np.searchsorted(self.levels[d], freq[:, d]) for d in range(2)]
        self.nc = 4 + util.shape[1]
        self.ns = [len(self.levels[d]) - 1 for d in range(2)]
        self.sigma = power if residual == "relative" else np.ones_like(power)
        self.loss = {"l2": "linear", "huber": "huber", "cauchy": "cauchy"}[loss]
        self.loss_scale = loss_scale if loss != "l2" else 1.0

    def n_params(self):
        return self.nc + sum(self.ns)

    def voltages(self, s, d):
        """Voltages at domain d's levels from its increments s, and dv/ds."""
        m, k = len(self.levels[d]), self.default_level[d]
        param = lambda j: j if j < k else j - 1
        v = np.ones(m)
        dv = np.zeros((m, m - 1))
        for j in range(k + 1, m):
            sj = s[param(j)]
            v[j] = v[j - 1] + sj * (V_MAX - v[j - 1])
            dv[j] = (1.0 - sj) * dv[j - 1]
            dv[j, param(j)] = V_MAX - v[j - 1]
        for j in range(k - 1, -1, -1):
            sj = s[param(j)]
            v[j] = v[j + 1] - sj * (v[j + 1] - V_MIN)
            dv[j] = (1.0 - sj) * dv[j + 1]
            dv[j, param(j)] = -(v[j + 1] - V_MIN)
        return v, dv

    def increments(self, v, d):
        """The s of domain d that give voltages v (monotone, v = 1 at the default)."""
        m, k = len(self.levels[d]), self.default_level[d]
        s = np.zeros(m - 1)
        for j in range(k + 1, m):
            room = V_MAX - v[j - 1]
            s[j - 1] = 0.0 if room <= 0 else np.clip((v[j] - v[j - 1]) / room, 0.0, 1.0)
        for j in range(k - 1, -1, -1):
            room = v[j + 1] - V_MIN
            s[j] = 0.0 if room <= 0 else np.clip((v[j + 1] - v[j]) / room, 0.0, 1.0)
        return s

    def split(self, x):
        c = x[:self.nc]
        s = [x[self.nc:self.nc + self.ns[0]], x[self.nc + self.ns[0]:]]
        return c, s

    def design(self, vrow):
        """Columns of the coefficients at per-row voltages vrow [rows x 2] (the model is linear
        in them): [v_c, v_m, v_c^2 f_c, v_m^2 f_m, v^2 f U_i ...]."""
        v2f = vrow ** 2 * self.freq
        return np.column_stack([vrow[:, 0], vrow[:, 1], v2f[:, 0], v2f[:, 1],
                                v2f[:, self.domain_of] * self.util])

    def row_voltages(self, s):
        vs, dvs = zip(*(self.voltages(s[d], d) for d in range(2)))
        vrow = np.column_stack([vs[d][self.level_of_row[d]] for d in range(2)])
        return vs, dvs, vrow

    def residuals(self, x):
        c, s = self.split(x)
        _, _, vrow = self.row_voltages(s)
        return (self.design(vrow) @ c - self.power) / self.sigma

    def jacobian(self, x):
        c, s = self.split(x)
        _, dvs, vrow = self.row_voltages(s)
        a = self.design(vrow)
        cols = [a]
        for d in range(2):
            inner = np.full(len(self.power), c[2 + d])
            mine = self.domain_of == d
            inner += self.util[:, mine] @ c[4:][mine]
            dp_dv = c[d] + 2.0 * vrow[:, d] * self.freq[:, d] * inner
            cols.append(dp_dv[:, None] * dvs[d][self.level_of_row[d]])
        return np.hstack(cols) / self.sigma[:, None]

    def cost(self, x):
        """0.5 sum rho(r^2): Ceres's cost, and scipy's least_squares cost for the same loss."""
        r2 = (self.residuals(x) / self.loss_scale) ** 2
        if self.loss == "linear":
            rho = r2
        elif self.loss == "huber":
            rho = np.where(r2 <= 1.0, r2, 2.0 * np.sqrt(r2) - 1.0)
        else:
            rho = np.log1p(r2)
        return 0.5 * self.loss_scale ** 2 * float(np.sum(rho))

    def nnls_start(self, volts):
        s = [self.increments(volts[d], d) for d in range(2)]
        _, _, vrow = self.row_voltages(s)
        a = self.design(vrow) / self.sigma[:, None]
        scale = np.linalg.norm(a, axis=0)
        scale[scale == 0] = 1.0
        c, _ = nnls(a / scale, self.power / self.sigma, maxiter=50 * a.shape[1])
        return np.concatenate([c / scale] + s)

    def solve(self, x0):
        lower = np.zeros(self.n_params())
        upper = np.concatenate([np.full(self.nc, np.inf), np.ones(sum(self.ns))])
        x0 = np.clip(x0, lower, upper)
        return least_squares(self.residuals, x0, jac=self.jacobian, bounds=(lower, upper),
                             method="trf", loss=self.loss, f_scale=self.loss_scale,
                             x_scale="jac", ftol=1e-15, xtol=1e-15, gtol=1e-12, max_nfev=3000)

    def predict(self, x, freq, util):
        """Power at any V-F pair inside the levels: voltages interpolated linearly between the
        estimated levels (PowerModel::VoltageAt)."""
        c, s = self.split(x)
        vrow = np.column_stack([np.interp(freq[:, d], self.levels[d], self.voltages(s[d], d)[0])
                                for d in range(2)])
        for d in range(2):
            if freq[:, d].min() < self.levels[d][0] or freq[:, d].max() > self.levels[d][-1]:
                raise ValueError("held-out frequency outside the training levels")
        v2f = vrow ** 2 * freq
        return (c[0] * vrow[:, 0] + c[1] * vrow[:, 1] + v2f[:, 0] * c[2] + v2f[:, 1] * c[3]
                + np.sum(v2f[:, self.domain_of] * util * c[4:], axis=1))


def model_params(problem, model):
    c = np.concatenate([model["static_w"], model["idle_dyn_w_per_mhz"],
                        [g["w_per_mhz"] for g in model["component_w_per_mhz"]]])
    s = []
    for d in range(2):
        if not np.array_equal(np.array(model["freq_levels_mhz"][d]), problem.levels[d]):
            raise ValueError("model.json's frequency levels of domain %d are not the training file's" % d)
        s.append(problem.increments(np.array(model["voltage_rel"][d]), d))
    return np.concatenate([c] + s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--starts", type=int, default=6, help="starts in all (cold, wattcal's, random)")
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--tolerance-rel", type=float, default=1e-8,
                    help="relative objective difference within which two optima are one")
    ap.add_argument("--tolerance-coef-rel", type=float, default=1e-3,
                    help="largest relative coefficient difference at one objective")
    ap.add_argument("--tolerance-v", type=float, default=1e-4,
                    help="largest voltage difference at one objective")
    ap.add_argument("--tolerance-mape-pct", type=float, default=1e-3,
                    help="held-out MAPE difference (points) of the two optima")
    a = ap.parse_args()
    t0 = time.time()
    try:
        with open(os.path.join(a.run_dir, "model", "model.json")) as f:
            model = json.load(f)
        with open(os.path.join(a.run_dir, "validation", "dvfs", "metrics.json")) as f:
            metrics = json.load(f)
        names, defaults, per_domain, power, freq, util, _ = read_gpmtool(resolve(model["trained_on"]))
        _, _, _, h_power, h_freq, h_util, _ = read_gpmtool(resolve(metrics["measurements"]))
        fit = model["fit"]
        if model["method"] != "dvfs" or fit["solver"] != "joint":
            raise ValueError("model.json is not a joint DVFS fit (method %s, solver %s)"
                             % (model["method"], fit["solver"]))
        if [g["component"] for g in model["component_w_per_mhz"]] != names:
            raise ValueError("model.json's components are not the training file's")
        problem = Problem(power, freq, util, defaults, per_domain, fit["residual"], fit["loss"],
                          fit["loss_scale"])
        x_wattcal = model_params(problem, model)
    except (OSError, KeyError, IndexError, ValueError) as e:
        print("dvfs_joint.py: error: %s" % e, file=sys.stderr)
        return 2

    cost_wattcal = problem.cost(x_wattcal)
    print("%s: %d rows, %d parameters (%d coefficients, %d + %d voltage increments); loss %s, "
          "scale %g, %s residuals" % (model["trained_on"], len(power), problem.n_params(), problem.nc,
                                      problem.ns[0], problem.ns[1], fit["loss"], fit["loss_scale"],
                                      fit["residual"]))
    print("wattcal: final_cost %.12g (model.json), %.12g (recomputed here; relative difference %.2g)"
          % (fit["final_cost"], cost_wattcal, (cost_wattcal - fit["final_cost"]) / fit["final_cost"]))
    ok = abs(cost_wattcal - fit["final_cost"]) <= 1e-9 * fit["final_cost"]

    rng = np.random.default_rng(a.seed)
    starts = [("cold start (v = 1, NNLS)", problem.nnls_start([np.ones(len(problem.levels[d])) for d in range(2)])),
              ("wattcal's optimum", x_wattcal)]
    for i in range(max(a.starts - 2, 0)):
        volts = []
        for d in range(2):
            k, m = problem.default_level[d], len(problem.levels[d])
            up = np.cumsum(rng.uniform(0.0, 0.6 / max(m - k - 1, 1), m - k - 1))
            down = np.cumsum(rng.uniform(0.0, 0.45 / max(k, 1), k))
            volts.append(np.concatenate([1.0 - down[::-1], [1.0], 1.0 + up]))
        starts.append(("random start %d (seed %d)" % (i + 1, a.seed), problem.nnls_start(volts)))
    results = []
    for label, x0 in starts:
        r = problem.solve(x0)
        c = problem.cost(r.x)
        results.append((c, label, r))
        print("  %-28s cost %.9g  (%+.3e relative to wattcal; %d evaluations, status %d)"
              % (label, c, (c - cost_wattcal) / cost_wattcal, r.nfev, r.status))
    best_cost, best_label, best = min(results, key=lambda t: t[0])
    rel = (best_cost - cost_wattcal) / cost_wattcal
    print("best: %s, cost %.9g; wattcal %.9g; relative difference %+.3e (tolerance %g)"
          % (best_label, best_cost, cost_wattcal, rel, a.tolerance_rel))
    if rel < -a.tolerance_rel:
        print("scipy found a LOWER objective than wattcal's: wattcal stopped at a local optimum or short of one")
        ok = False

    cx, sx = problem.split(best.x)
    cw, sw = problem.split(x_wattcal)
    coef_names = ["static_w core", "static_w mem", "idle_dyn_w_per_mhz core", "idle_dyn_w_per_mhz mem"] + names
    # Relative differences of the coefficients, against the larger of the two (a coefficient at
    # its bound 0 in one and not in the other counts as 1).
    dc_all = np.abs(cx - cw) / np.maximum(np.maximum(np.abs(cx), np.abs(cw)), 1e-300)
    dc_all[(cx == 0) & (cw == 0)] = 0.0
    worst = int(np.argmax(dc_all))
    dc = float(dc_all[worst])
    vx = [problem.voltages(sx[d], d)[0] for d in range(2)]
    vw = [problem.voltages(sw[d], d)[0] for d in range(2)]
    dv = max(float(np.max(np.abs(vx[d] - vw[d]))) for d in range(2))
    print("coefficients: largest relative difference %.3g (%s: scipy %.9g, wattcal %.9g; tolerance %g)"
          % (dc, coef_names[worst], cx[worst], cw[worst], a.tolerance_coef_rel))
    print("voltages: largest absolute difference %.3g (tolerance %g); on a bound in both: %s"
          % (dv, a.tolerance_v, ", ".join(
              "%s %g MHz = %g" % (("core", "mem")[d], problem.levels[d][j], vw[d][j])
              for d in range(2) for j in range(len(vw[d]))
              if min(abs(vw[d][j] - V_MIN), abs(vw[d][j] - V_MAX)) < 1e-9) or "none"))

    mape = lambda x: float(np.mean(100.0 * np.abs(problem.predict(x, h_freq, h_util) - h_power) / h_power))
    m_best, m_wattcal = mape(best.x), mape(x_wattcal)
    print("held-out MAPE (%d rows): scipy's optimum %.6f%%, wattcal's model %.6f%% (recomputed here), "
          "validation/dvfs/metrics.json %.6f%%" % (len(h_power), m_best, m_wattcal, metrics["mape_pct"]))
    if abs(m_wattcal - metrics["mape_pct"]) > 1e-9:
        print("wattcal's model scores differently here than in validation/dvfs/metrics.json")
        ok = False
    if abs(rel) <= a.tolerance_rel:
        # The same objective: the same optimum, unless the valley is flatter than the tolerances.
        if dc > a.tolerance_coef_rel or dv > a.tolerance_v or abs(m_best - m_wattcal) > a.tolerance_mape_pct:
            print("the same objective at different parameters or held-out MAPE: beyond the tolerances")
            ok = False
    elif rel > a.tolerance_rel:
        print("scipy's best start stayed above wattcal's objective: not certified either way (more --starts?)")
        ok = False
    print("%.1f s" % (time.time() - t0))
    print("certified" if ok else "NOT certified")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
