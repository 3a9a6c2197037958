"""The Python package gives the executables' numbers: the same bytes where both write text, the
same doubles where the package hands back values."""

import json
import os
import subprocess
import sys

import wattcal
from wattcal import _tables, _wattcal

from conftest import APPS, GPU, ROOT, SUITE, read, run_tool


def test_predict_capture_same_bytes_and_values(cli):
    model = wattcal.Model.load(cli["model"])
    capture = wattcal.read_capture(APPS, gpu=GPU)
    native = _wattcal.predict_capture(model._native, cli["model"], capture._native, None, False, [], [])
    assert native["apps"] == read(cli["apps"])
    assert native["breakdown"] == read(cli["breakdown"])
    table = model.predict(capture, breakdown=True, pandas=False)
    expected = _tables.records_from_csv(read(cli["apps"]))
    terms = _tables.records_from_csv(read(cli["breakdown"]))
    assert len(table) == len(expected) == 11
    for row, want, parts in zip(table, expected, terms):
        for k, v in {**parts, **want}.items():
            assert row[k] == v, (row["workload"], k)
    assert "11 workloads predicted at 1980 MHz" in native["summary"]


def test_predict_dataframe(cli):
    pandas = __import__("pytest").importorskip("pandas")
    model = wattcal.Model.load(cli["model"])
    frame = model.predict(wattcal.read_capture(APPS, gpu=GPU))
    assert isinstance(frame, pandas.DataFrame)
    cli_frame = pandas.read_csv(cli["apps"], keep_default_na=False, na_values=[""])
    assert list(frame.columns) == list(cli_frame.columns)
    assert (frame["predicted_w"] == cli_frame["predicted_w"]).all()
    assert (frame["energy_j"] == cli_frame["energy_j"]).all()


def test_calibrate_same_model_bytes(cli):
    model = wattcal.calibrate(cli["tidy"], method="auto", bootstrap=200)
    assert model.to_json() == read(cli["model"])


def test_calibrate_from_captures_same_doubles(cli):
    ours = wattcal.calibrate([SUITE], gpu=GPU, method="auto", bootstrap=200).to_dict()
    theirs = wattcal.Model.load(cli["model"]).to_dict()
    for key in ("static_w", "idle_dyn_w_per_mhz", "component_w_per_mhz", "freq_levels_mhz",
                "voltage_rel", "power_limit_w", "gpu", "method", "component_trust"):
        assert ours[key] == theirs[key], key


def test_model_accessors(cli):
    model = wattcal.Model.load(cli["model"])
    d = model.to_dict()
    assert model.gpu == d["gpu"] == "NVIDIA H100 80GB HBM3"
    assert model.method == "fixed"
    assert model.components == [c["component"] for c in d["component_w_per_mhz"]]
    assert model.coefficients["static_w"]["core"] == d["static_w"][0]
    assert model.vf_levels["core"][0]["freq_mhz"] == 1980
    assert len(model.trust) == len(d["component_trust"])


def test_read_capture_tables():
    capture = wattcal.read_capture(APPS, gpu=GPU, require_power_log=True)
    windows = capture.windows(pandas=False)
    assert len(windows) >= 11 and "mean_power_w" in windows[0] and "flags" in windows[0]
    assert capture.recorded_on.startswith("NVIDIA H100")
    assert capture.power_limit_w == 700


def test_validate_same_metrics(cli, tmp_path):
    ours = wattcal.validate(cli["tidy"], folds=5, mode="auto")
    metrics = str(tmp_path / "out" / "metrics.json")
    run_tool("wattcal-validate", "--train", cli["tidy"], "--cv-folds", "5", "--mode", "auto", "--predictions",
             str(tmp_path / "out" / "predictions.csv"), "--metrics", metrics, "--run-dir", str(tmp_path))
    theirs = json.loads(read(metrics))
    assert ours["metrics"] == theirs
    assert round(ours["metrics"]["mape_pct"], 2) == 8.00  # README: the own suite cross-validates at 8.00%
    assert len(ours["predictions"]) == 189  # every row of the 39-benchmark suite, held out once


def test_marks_in_the_package():
    from wattcal import marks
    assert wattcal.window is marks.window and wattcal.MarkError is marks.MarkError
    # python/wattcal_marks.py, from a checkout without the native module: the same file.
    code = ("import wattcal_marks, sys; assert wattcal_marks.__file__.endswith('marks.py'); "
            "assert 'wattcal._wattcal' not in sys.modules; print(wattcal_marks.window.__name__)")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd="/")
    assert out.returncode == 0 and out.stdout.strip() == "window", out.stderr
