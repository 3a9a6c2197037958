# A counted call log of a stage run, under gdb: how often the use cases' internals are entered and
# from where (issue 37: the trips of --method auto between the command layer and the library, the
# row selections, the corpus reads). Counts without stopping the program; prints one line per
# (function, caller) when it exits.
#
#   gdb -q -batch -x scripts/count_calls.py -ex run --args build/bin/wattcal-calibrate \
#       --train T.csv --out M.json --method auto -q 2>&1 | grep '^CALLS'
import re

import gdb

FUNCTIONS = [
    "wattcal::AutoFitMethod", "wattcal::SelectTrainingRows", "wattcal::FindIndistinguishableRows",
    "wattcal::ReadCorpus", "wattcal::ResolvePowerLimitW",
    "wattcal::Calibrate(wattcal::Corpus const&, wattcal::CalibrationOptions const&)",
    "wattcal::Calibrate(wattcal::Corpus const&, wattcal::TrainingSelection const&, "
    "wattcal::CalibrationOptions const&)",
]
counts = {}


def short(frame):
    name = frame.name() if frame is not None else None
    return re.sub(r"\(.*", "", name or "?")


class Counter(gdb.Breakpoint):
    def stop(self):
        frame = gdb.newest_frame()
        key = (short(frame), short(frame.older()))
        counts[key] = counts.get(key, 0) + 1
        return False


gdb.execute("set pagination off")
gdb.execute("set breakpoint pending on")
for function in FUNCTIONS:
    Counter(function, internal=True)


def report(_event):
    for (callee, caller), n in sorted(counts.items()):
        print("CALLS %3d %s <- %s" % (n, callee, caller))


gdb.events.exited.connect(report)
