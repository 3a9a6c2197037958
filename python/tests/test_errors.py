"""Errors are Python exceptions with the executables' messages (FILE:LINE: FIELD: what)."""

import os
import sys

import pytest

import wattcal

from conftest import APPS, GPU, H200_MODEL, ROOT, run_tool


def cli_error(stderr):
    return [line[len("error: "):] for line in stderr.splitlines() if line.startswith("error: ")][-1]


def test_bad_path():
    with pytest.raises(wattcal.InputError) as e:
        wattcal.Model.load("/nonexistent/model.json")
    assert "/nonexistent/model.json" in str(e.value)
    assert e.value.file == "/nonexistent/model.json"
    with pytest.raises(wattcal.InputError) as e:
        wattcal.read_capture("/nonexistent/capture", gpu=GPU)
    assert "/nonexistent/capture" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_model_of_another_gpu(cli, tmp_path):
    # The H100 model on the applications recorded on an H200 (with the H200's description).
    h200_apps = os.path.join(ROOT, "datasets", "captures", "h200", "apps")
    h200_gpu = os.path.join(ROOT, "microbench_specs", "gpus", "h200_sxm.json")
    model = wattcal.Model.load(cli["model"])
    with pytest.raises(wattcal.InputError) as e:
        model.predict(wattcal.read_capture(h200_apps, gpu=h200_gpu))
    status, stderr = run_tool("wattcal-predict", "--model", cli["model"], "--capture", h200_apps, "--gpu",
                              h200_gpu, "--out", str(tmp_path / "p.csv"), check=False)
    assert status == 2
    assert str(e.value) == cli_error(stderr)
    assert "was trained on data of NVIDIA H100 80GB HBM3" in str(e.value) and e.value.field == "gpu"
    # A model of another layout (an H200 model from a corpus with other clocks) on the H100 capture.
    with pytest.raises(wattcal.InputError) as e:
        wattcal.Model.load(H200_MODEL).predict(wattcal.read_capture(APPS, gpu=GPU))
    status, stderr = run_tool("wattcal-predict", "--model", H200_MODEL, "--capture", APPS, "--gpu", GPU,
                              "--out", str(tmp_path / "q.csv"), check=False)
    assert status == 2 and str(e.value) == cli_error(stderr)


def test_dataframe_missing_column(cli, tmp_path):
    model = wattcal.Model.load(cli["model"])
    rows = wattcal.read_capture(APPS, gpu=GPU).workloads(pandas=False)
    activity = [{k: v for k, v in r.items() if k not in ("power_w", "f_core_mhz", "f_mem_mhz", "flags")}
                for r in rows]
    assert len(model.predict(activity, pandas=False)) == len(rows)  # the whole table predicts
    for r in activity:
        del r["core:TENSOR"]
    with pytest.raises(wattcal.InputError) as e:
        model.predict(activity)
    assert str(e.value).startswith("<DataFrame>:1: component names:")
    assert e.value.file == "<DataFrame>"
    path = tmp_path / "activity.csv"
    path.write_text(wattcal._tables.to_csv(activity))
    status, stderr = run_tool("wattcal-predict", "--model", cli["model"], "--activity", str(path),
                              "--out", str(tmp_path / "p.csv"), check=False)
    assert status == 2
    assert str(e.value) == cli_error(stderr).replace(str(path), "<DataFrame>")


def test_without_pandas(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    model = wattcal.Model.load(cli["model"])
    table = model.predict(wattcal.read_capture(APPS, gpu=GPU))
    assert isinstance(table, list) and isinstance(table[0], dict)
    assert table[0]["workload"] == "gemm_fp16" and isinstance(table[0]["predicted_w"], float)
    assert isinstance(model.trust, list)
