"""Errors are Python exceptions with the executables' messages (FILE:LINE: FIELD: what)."""

import sys

import pytest

import wattcal

from conftest import APPS, GPU, H200_MODEL, run_tool


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


def test_model_of_another_gpu(tmp_path):
    model = wattcal.Model.load(H200_MODEL)
    with pytest.raises(wattcal.InputError) as e:
        model.predict(wattcal.read_capture(APPS, gpu=GPU))
    status, stderr = run_tool("wattcal-predict", "--model", H200_MODEL, "--capture", APPS, "--gpu", GPU,
                              "--out", str(tmp_path / "p.csv"), check=False)
    assert status == 2
    assert str(e.value) == cli_error(stderr)


def test_dataframe_missing_column(cli, tmp_path):
    model = wattcal.Model.load(cli["model"])
    rows = wattcal.read_capture(APPS, gpu=GPU).workloads(pandas=False)
    for r in rows:
        del r["core:TENSOR"]
    with pytest.raises(wattcal.InputError) as e:
        model.predict(rows)
    assert str(e.value).startswith("<DataFrame>")
    path = tmp_path / "activity.csv"
    path.write_text(wattcal._tables.to_csv(rows))
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
