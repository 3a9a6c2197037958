"""Fixtures: the checkout, the executables (WATTCAL_BIN, default <checkout>/build/bin) and their
outputs on the committed H100 capture (datasets/captures/h100), made once per session the way
`make -f Makefile.runs h100-own` makes them."""

import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GPU = os.path.join(ROOT, "microbench_specs", "gpus", "h100_sxm.json")
SUITE = os.path.join(ROOT, "datasets", "captures", "h100", "suite")
APPS = os.path.join(ROOT, "datasets", "captures", "h100", "apps")
H200_MODEL = os.path.join(ROOT, "tests", "fixtures", "json", "power_model_h200.json")


def bin_path(name):
    path = os.path.join(os.environ.get("WATTCAL_BIN", os.path.join(ROOT, "build", "bin")), name)
    if not os.access(path, os.X_OK):
        pytest.fail("%s not built: build the tools first (cmake --build build --target wattcal_tools)" % path)
    return path


def run_tool(name, *args, check=True):
    """Runs build/bin/NAME ARGS...; returns (exit status, stderr)."""
    p = subprocess.run([bin_path(name), *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        pytest.fail("%s %s failed (%d): %s" % (name, " ".join(args), p.returncode, p.stderr))
    return p.returncode, p.stderr


@pytest.fixture(scope="session")
def cli(tmp_path_factory):
    """The executables' model and predictions: ingest --tidy, calibrate --method auto
    --bootstrap 200, predict --capture --breakdown-out."""
    run = tmp_path_factory.mktemp("cli")
    out = {"run": str(run), "tidy": str(run / "tidy" / "measured.csv"),
           "model": str(run / "model" / "model.json"), "apps": str(run / "pred" / "apps.csv"),
           "breakdown": str(run / "pred" / "apps_breakdown.csv")}
    run_tool("wattcal-ingest", "--capture", SUITE, "--gpu", GPU, "--tidy", out["tidy"], "--run-dir", out["run"])
    run_tool("wattcal-calibrate", "--train", out["tidy"], "--out", out["model"], "--method", "auto",
             "--bootstrap", "200", "--run-dir", out["run"])
    run_tool("wattcal-predict", "--model", out["model"], "--capture", APPS, "--gpu", GPU, "--out", out["apps"],
             "--breakdown-out", out["breakdown"], "--run-dir", out["run"])
    return out


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()
