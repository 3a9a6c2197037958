"""wattcal's own H100 applications: predicted power and energy, plotted (python/README.md).
From the checkout, after `pip install ./python`: python3 examples/predict_h100.py [OUT.png]"""
import os, sys
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
import wattcal

GPU, MODEL = "microbench_specs/gpus/h100_sxm.json", "reports/h100-own/model/model.json"  # make -f Makefile.runs h100-own
model = wattcal.Model.load(MODEL) if os.path.exists(MODEL) else wattcal.calibrate("datasets/captures/h100/suite", gpu=GPU, bootstrap=200)
apps = model.predict(wattcal.read_capture("datasets/captures/h100/apps", gpu=GPU))
print(apps[["workload", "predicted_w", "measured_w", "energy_j", "measured_energy_j", "flags"]].to_string(index=False))
fig, (p, e) = plt.subplots(1, 2, figsize=(13, 4.8), sharey=True)
err = [apps.predicted_w - apps.predicted_w_lo, apps.predicted_w_hi - apps.predicted_w]
p.barh(apps.workload, apps.predicted_w, xerr=err, ecolor="0.4", color="tab:blue", label="predicted (95% interval)")
p.plot(apps.measured_w, apps.workload, "k|", ms=16, mew=2, label="measured"); p.set_xlabel("power (W)"); p.legend(loc="lower left", bbox_to_anchor=(0, 1), ncol=2, frameon=False)
e.barh(apps.workload, apps.energy_j, color="tab:orange", label="predicted"); e.plot(apps.measured_energy_j, apps.workload, "k|", ms=16, mew=2, label="measured")
e.set_xlabel("energy over the run (J)"); e.legend(loc="lower left", bbox_to_anchor=(0, 1), ncol=2, frameon=False); fig.suptitle(f"{model.gpu}: {len(apps)} applications, wattcal {model.method} model")
fig.tight_layout(); fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "predict_h100.png", dpi=110)
