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


def test_read_capture_of_gpm_fields_same_bytes(tmp_path):
    """A capture recorded with --fields gpm, read through the GPM field set (no Nsight Compute), as
    wattcal-ingest reads it: the same tidy table; calibrated from Python as from the tools."""
    fake_nvml = os.path.join(ROOT, "build", "tests", "libfake_nvml.so")
    if not os.path.exists(fake_nvml):
        __import__("pytest").fail("%s not built: build the tests (cmake --build build)" % fake_nvml)
    fields = os.path.join(ROOT, "microbench_specs", "gpus", "fields", "h100_sxm_gpm.json")
    cap = str(tmp_path / "gpm")
    env = dict(os.environ, WATTCAL_SIMULATED_GPU="1", WATTCAL_NVML_LIBRARY=fake_nvml,
               FAKE_NVML_LOAD_FILE=str(tmp_path / "load"), FAKE_NVML_NAME="NVIDIA H100 80GB HBM3",
               FAKE_NVML_IDLE_W="80", FAKE_NVML_SEED="7")
    only = ("^(idle_sleep|int_add|fp32_fma|fp64_fma|fp16_hfma2|tensor_fp16_sm5of8|tensor_int8|dram_ld|"
            "dram_write|sm_sweep_int_add_0(33|66|99)|mix_int_fp32|mix_fp64_dram|mix_tensor_dram)$")
    p = subprocess.run([os.path.join(ROOT, "build", "bin", "wattcal-capture"), "--out", cap, "--fields", "gpm",
                        "--only", only, "--seconds", "0.3", "--gap-ms", "60", "--idle-s", "0.3",
                        "--sample-ms", "5"], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    tidy = str(tmp_path / "tidy.csv")
    run_tool("wattcal-ingest", "--capture", cap, "--gpu", fields, "--tidy", tidy, "--run-dir", str(tmp_path))
    capture = wattcal.read_capture(cap, gpu=fields)
    assert capture._native.measured_csv() == read(tidy)
    assert capture.recorded_on == "NVIDIA H100 80GB HBM3"
    model = str(tmp_path / "model.json")
    run_tool("wattcal-calibrate", "--train", tidy, "--out", model, "--method", "auto", "--run-dir", str(tmp_path))
    ours, theirs = wattcal.calibrate(capture, method="auto").to_dict(), wattcal.Model.load(model).to_dict()
    for key in ("static_w", "component_w_per_mhz", "freq_levels_mhz", "power_limit_w", "gpu", "method"):
        assert ours[key] == theirs[key], key
