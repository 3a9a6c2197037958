"""wattcal in Python: calibrated GPU power models, captures and predictions over the same C++
library as the wattcal-* executables (every number comes from it; nothing is recomputed here).

    import wattcal
    model = wattcal.Model.load("reports/h100-own/model/model.json")
    apps = wattcal.read_capture("datasets/captures/h100/apps", gpu="microbench_specs/gpus/h100_sxm.json")
    table = model.predict(apps)          # wattcal-predict --capture's table, a pandas.DataFrame

Tables are pandas DataFrames when pandas is importable, else lists of dict records. The marks
(``with wattcal.window("steady", steps=n): ...``) need no native module: they are plain Python.
See docs/python.md.
"""

from .marks import MarkError, Window, begin, enabled, end, window

_API = ("Model", "Capture", "read_capture", "calibrate", "validate", "record", "InputError",
        "OptionError", "FitError")

__all__ = ["window", "Window", "begin", "end", "enabled", "MarkError", *_API]
__version__ = "0.1.0"


def __getattr__(name):
    # The native part is imported on first use, so that the marks work from a checkout
    # (PYTHONPATH=<wattcal>/python) on a machine where the package was never built.
    if name in _API:
        from . import _api

        return getattr(_api, name)
    raise AttributeError("module 'wattcal' has no attribute %r" % name)
