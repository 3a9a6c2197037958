"""wattcal marks for Python programs, without installing the package: ``import wattcal_marks``
with PYTHONPATH=<wattcal>/python is the module wattcal/marks.py itself (``wattcal.window`` once the
package is installed). It loads that one file only, so it needs neither the native module nor a
build: a program recorded on a bare GPU machine imports it as it did before the package."""

import importlib.util
import os
import sys

if "wattcal.marks" in sys.modules:  # the package's own copy: one set of open windows
    sys.modules[__name__] = sys.modules["wattcal.marks"]
else:
    _spec = importlib.util.spec_from_file_location(
        __name__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "wattcal", "marks.py"))
    _marks = importlib.util.module_from_spec(_spec)
    sys.modules[__name__] = _marks
    _spec.loader.exec_module(_marks)
