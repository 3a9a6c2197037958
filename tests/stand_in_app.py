#!/usr/bin/env python3
"""A stand-in for scripts/device_apps.py where there is no GPU (tests/device_rehearsal_test.cc):
the same arguments (NAME --seconds S, --list), one marked window NAME of S seconds, during which
the file $FAKE_NVML_LOAD_FILE exists so that the stand-in NVML (tests/fake_nvml.c) draws more
power. It rehearses scripts/device_apps.sh's plumbing; the real applications need PyTorch."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import wattcal_marks  # noqa: E402

if sys.argv[1:] == ["--list"]:
    print("stand_in_a\nstand_in_b")
    sys.exit(0)
name, seconds = sys.argv[1], float(sys.argv[sys.argv.index("--seconds") + 1])
if os.environ.get("WATTCAL_PROFILING"):
    seconds = 0.05
time.sleep(0.2)  # start-up, left out of the window
load = os.environ.get("FAKE_NVML_LOAD_FILE")
with wattcal_marks.window(name, sync=None):
    if load:
        open(load, "w").close()
    time.sleep(seconds)
    if load:
        os.remove(load)
time.sleep(0.1)
