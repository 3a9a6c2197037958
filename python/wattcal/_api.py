"""Models, captures, predictions, calibration and validation: each a call of one use case of the
C++ library (pipeline/usecases/) through the native module, returning what the executables write."""

import json
import os
import shutil
import subprocess
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _wattcal
from ._tables import table_from_csv, to_csv

InputError = _wattcal.InputError
OptionError = _wattcal.OptionError
FitError = _wattcal.FitError

PathLike = Union[str, "os.PathLike[str]"]


def _paths(dirs: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    if isinstance(dirs, (str, os.PathLike)):
        return [os.fspath(dirs)]
    return [os.fspath(d) for d in dirs]


def _floats(values: Union[None, float, Sequence[float]]) -> List[float]:
    if values is None:
        return []
    if isinstance(values, (int, float)):
        return [float(values)]
    return [float(v) for v in values]


class Capture:
    """Capture directories read with a GPU description (wattcal-ingest --capture): its windows
    with their power, clocks, flags and utilisations, and the measured table."""

    def __init__(self, native: "_wattcal.NativeCapture"):
        self._native = native

    @property
    def dirs(self) -> List[str]:
        return self._native.dirs

    @property
    def gpu_path(self) -> str:
        return self._native.gpu_path

    @property
    def recorded_on(self) -> str:
        """The GPU the captures were recorded on ("" when they do not say)."""
        return self._native.recorded_on

    @property
    def power_limit_w(self) -> Optional[float]:
        return self._native.power_limit_w

    @property
    def warnings(self) -> List[str]:
        return self._native.warnings

    def windows(self, pandas: Optional[bool] = None) -> Any:
        """One row per window: energy_j, mean_power_w, clocks, flags, util:<component>... (the
        table wattcal-ingest --out writes)."""
        return table_from_csv(self._native.windows_csv(), pandas)

    def measured(self, pandas: Optional[bool] = None) -> Any:
        """One row per benchmark window: benchmark, power_w, clocks, flags, components (the tidy
        table wattcal-ingest --tidy writes)."""
        return table_from_csv(self._native.measured_csv(), pandas)

    def workloads(self, pandas: Optional[bool] = None) -> Any:
        """The same with one row per workload (wattcal-ingest --per-workload --tidy)."""
        return table_from_csv(self._native.workloads_csv(), pandas)

    def summary(self) -> str:
        return self._native.summary()

    def __repr__(self) -> str:
        return "wattcal.Capture(%r, gpu=%r)" % (self.dirs, self.gpu_path)


def read_capture(dirs: Union[PathLike, Sequence[PathLike]], gpu: PathLike,
                 require_power_log: bool = False, allow_other_gpu: bool = False) -> Capture:
    """Reads capture directories (wattcal-capture's output) with the GPU description `gpu`
    (microbench_specs/gpus/*.json: ncu counters), or a field set (microbench_specs/gpus/fields/:
    the GPM or DCGM fields the capture recorded, gpm_fields.csv), as wattcal-ingest takes either.
    Without a power log a capture is read for its counters only (applications to predict) unless
    `require_power_log`."""
    return Capture(_wattcal.read_capture(_paths(dirs), os.fspath(gpu), require_power_log,
                                         allow_other_gpu))


class Model:
    """A calibrated power model (wattcal-calibrate's JSON, or gpmTOOL's model file)."""

    def __init__(self, native: "_wattcal.NativeModel", path: str):
        self._native = native
        self.path = path
        self._dict: Optional[Dict[str, Any]] = None

    @classmethod
    def load(cls, path: PathLike) -> "Model":
        """Reads a model file; a bad file raises InputError with wattcal-predict's message."""
        return cls(_wattcal.read_model(os.fspath(path)), os.fspath(path))

    def to_json(self) -> str:
        """The model file's text, byte for byte what wattcal-calibrate writes."""
        return self._native.to_json()

    def to_dict(self) -> Dict[str, Any]:
        if self._dict is None:
            self._dict = json.loads(self.to_json())
        return json.loads(json.dumps(self._dict))

    def save(self, path: PathLike) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    @property
    def method(self) -> str:
        return self.to_dict()["method"]

    @property
    def gpu(self) -> Optional[str]:
        """The GPU the training data came from (None when the model does not say)."""
        return self.to_dict().get("gpu")

    @property
    def power_limit_w(self) -> Optional[float]:
        return self.to_dict().get("power_limit_w")

    @property
    def components(self) -> List[str]:
        return [c["component"] for c in self.to_dict()["component_w_per_mhz"]]

    @property
    def coefficients(self) -> Dict[str, Any]:
        """static_w and idle_dyn_w_per_mhz per domain, component_w_per_mhz per component."""
        d = self.to_dict()
        names = [x["name"] for x in d["layout"]["domains"]]
        return {"static_w": dict(zip(names, d["static_w"])),
                "idle_dyn_w_per_mhz": dict(zip(names, d["idle_dyn_w_per_mhz"])),
                "component_w_per_mhz": {c["component"]: c["w_per_mhz"] for c in d["component_w_per_mhz"]}}

    @property
    def vf_levels(self) -> Dict[str, List[Dict[str, float]]]:
        """Per domain, its frequency levels with their relative voltages."""
        d = self.to_dict()
        return {dom["name"]: [{"freq_mhz": f, "voltage_rel": v} for f, v in zip(fs, vs)]
                for dom, fs, vs in zip(d["layout"]["domains"], d["freq_levels_mhz"], d["voltage_rel"])}

    @property
    def trust(self) -> Any:
        """The component trust table (full_use_w, its interval, trained_up_to_frac, flags)."""
        from ._tables import _pandas
        rows = self.to_dict().get("component_trust", [])
        pd = _pandas()
        return pd.DataFrame.from_records(rows) if pd is not None else rows

    def predict(self, data: Any, power_limit_w: Optional[float] = None,
                at_clock: Union[None, float, Sequence[float]] = None,
                at_power_limit_w: Union[None, float, Sequence[float]] = None,
                breakdown: bool = False, mode: str = "dvfs", allow_other_gpu: bool = False,
                pandas: Optional[bool] = None) -> Any:
        """Predicts a Capture (wattcal-predict --capture: power, interval, energy, flags; with
        breakdown=True the per-term watts of --breakdown-out beside them; with at_clock or
        at_power_limit_w the what-if table of --what-if-out instead), or a DataFrame / records /
        tidy CSV path of activity (wattcal-predict --activity --breakdown: benchmark, f_core_mhz,
        f_mem_mhz and the model's components; mode "dvfs" or "fixed")."""
        if isinstance(data, Capture):
            t = _wattcal.predict_capture(self._native, self.path, data._native, power_limit_w,
                                         allow_other_gpu, _floats(at_clock), _floats(at_power_limit_w))
            if at_clock is not None or at_power_limit_w is not None:
                return table_from_csv(t["what_if"], pandas)
            return _with_breakdown(t["apps"], t["breakdown"] if breakdown else None, pandas)
        if at_clock is not None or at_power_limit_w is not None:
            raise OptionError("at_clock and at_power_limit_w go with a Capture (wattcal-predict --capture)")
        if mode not in ("dvfs", "fixed"):
            raise OptionError("mode '%s': expected dvfs or fixed" % mode)
        if isinstance(data, (str, os.PathLike)):
            return table_from_csv(_wattcal.predict_activity(self._native, os.fspath(data),
                                                            mode == "fixed", power_limit_w), pandas)
        with _TableFile(data, "activity.csv") as path:
            return table_from_csv(_wattcal.predict_activity(self._native, path, mode == "fixed",
                                                            power_limit_w), pandas)

    def __repr__(self) -> str:
        return "wattcal.Model(%r: %s, %s)" % (self.path, self.method, self.gpu)


def _with_breakdown(apps_csv: str, breakdown_csv: Optional[str], pandas: Optional[bool]) -> Any:
    table = table_from_csv(apps_csv, pandas)
    if breakdown_csv is None:
        return table
    terms = table_from_csv(breakdown_csv, pandas)
    if isinstance(table, list):
        for row, parts in zip(table, terms):
            row.update({k: v for k, v in parts.items() if k not in row})
        return table
    extra = [c for c in terms.columns if c not in table.columns]
    return table.join(terms[extra])


class _TableFile:
    """A DataFrame or records written as CSV to a temporary file for the C++ readers; their
    messages name it "<DataFrame>" (its line numbers are the table's: header = line 1)."""

    def __init__(self, table: Any, name: str):
        self._table = table
        self._name = name
        self._dir = ""

    def __enter__(self) -> str:
        self._dir = tempfile.mkdtemp(prefix="wattcal-")
        path = os.path.join(self._dir, self._name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(to_csv(self._table))
        return path

    def __exit__(self, kind, error, tb) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)
        if isinstance(error, (InputError, OptionError)) and self._dir in str(error):
            text = str(error).replace(os.path.join(self._dir, self._name), "<DataFrame>")
            error.args = (text,)
            if getattr(error, "file", None):
                error.file = "<DataFrame>"


def calibrate(data: Any, gpu: Optional[PathLike] = None, method: str = "auto", bootstrap: int = 0,
              seed: int = 1, keep_flagged: bool = False, threads: int = 1) -> Model:
    """wattcal-calibrate --method METHOD [--bootstrap N --seed S]: from capture directories (with
    `gpu`, their description), a Capture, a tidy CSV / gpmTOOL training file, or a DataFrame /
    records of the tidy columns (benchmark, power_w, f_core_mhz, f_mem_mhz, components)."""
    if isinstance(data, Capture):
        native = _wattcal.calibrate_capture(data._native, method, bootstrap, seed, keep_flagged, threads)
        return Model(native, "<calibrated model>")
    if gpu is not None:
        return calibrate(read_capture(data, gpu, require_power_log=True), method=method,
                         bootstrap=bootstrap, seed=seed, keep_flagged=keep_flagged, threads=threads)
    if isinstance(data, (str, os.PathLike)):
        native = _wattcal.calibrate_file(os.fspath(data), method, bootstrap, seed, keep_flagged, threads)
        return Model(native, "<calibrated model>")
    with _TableFile(data, "train.csv") as path:
        return Model(_wattcal.calibrate_file(path, method, bootstrap, seed, keep_flagged, threads),
                     "<calibrated model>")


def validate(train: Any = None, folds: int = 5, seed: int = 1, mode: str = "auto",
             model: Union[None, Model, PathLike] = None, heldout: Any = None,
             pandas: Optional[bool] = None) -> Dict[str, Any]:
    """wattcal-validate: cross-validation by benchmark of a training table (`train`: a tidy CSV
    path, DataFrame or records; `folds`, `seed`), or a model on held-out measurements (`model`,
    `heldout`). Returns {"predictions": table, "metrics": the metrics JSON as a dict}."""
    work = tempfile.mkdtemp(prefix="wattcal-validate-")
    try:
        def as_path(table: Any, name: str) -> str:
            if table is None or isinstance(table, (str, os.PathLike)):
                return "" if table is None else os.fspath(table)
            path = os.path.join(work, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(to_csv(table))
            return path

        model_path = ""
        if isinstance(model, Model):
            model_path = os.path.join(work, "model.json")
            model.save(model_path)
        elif model is not None:
            model_path = os.fspath(model)
        predictions = os.path.join(work, "out", "predictions.csv")
        metrics = os.path.join(work, "out", "metrics.json")
        _wattcal.validate(as_path(train, "train.csv"), folds if train is not None else 0, seed,
                          model_path, as_path(heldout, "heldout.csv"), mode, predictions, metrics)
        with open(predictions, encoding="utf-8") as f:
            table = table_from_csv(f.read(), pandas)
        with open(metrics, encoding="utf-8") as f:
            return {"predictions": table, "metrics": json.load(f)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def record(app: str, out: PathLike, command: Sequence[str], gpu: Optional[PathLike] = None,
           repeat: int = 1, counters: bool = False, capture: Optional[PathLike] = None) -> Capture:
    """wattcal-capture --app APP --out OUT [--repeat N] [--counters --gpu-description GPU] --
    COMMAND..., run as a command (needs an NVIDIA GPU, or the simulated one); returns the
    capture read back with `gpu`. `capture`: the wattcal-capture executable (default: on PATH)."""
    exe = os.fspath(capture) if capture is not None else (shutil.which("wattcal-capture") or "wattcal-capture")
    argv = [exe, "--app", app, "--out", os.fspath(out), "--repeat", str(repeat)]
    if counters:
        argv.append("--counters")
    if gpu is not None:
        argv += ["--gpu-description", os.fspath(gpu)]
    subprocess.run(argv + ["--"] + list(command), check=True)
    if gpu is None:
        raise OptionError("record: give gpu= to read the capture back (wattcal-capture wrote %s)" % out)
    return read_capture(out, gpu)
