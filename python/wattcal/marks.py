"""wattcal marks for Python programs: mark the windows of a run that
``wattcal-capture --app NAME -- python program.py`` should measure, so that start-up, imports,
data loading and warm-up are left out.

    import wattcal                                    # pip install <wattcal>/python (or: import wattcal_marks)

    with wattcal.window("steady", steps=n):           # begin steady ... end steady n
        for step in range(n):
            train_step()

or, for a program that counts as it goes::

    with wattcal.window("steady") as w:
        k = 0
        while not done():
            train_step()
            k += 1
        w.steps = k

Mark ONE window around the loop, a second or more of it, not one window per step: the power meter
reads every ~100 ms, and a window of one step holds too few readings to measure (flagged
too_few_samples). The steps are optional; with them wattcal-predict --capture gives the energy
per step.

When the environment has WATTCAL_MARKS=FILE (wattcal-capture sets it for the program it runs),
each mark appends one line to FILE with a single os.write in append mode::

    begin NAME NANOSECONDS
    end NAME NANOSECONDS [STEPS]

NANOSECONDS is time.time_ns(), CLOCK_REALTIME, the clock of wattcal-capture's NVML sampler.
Without WATTCAL_MARKS nothing is written, so the program runs unchanged outside wattcal-capture.
Windows must not nest (an error), and NAME is one word: 1 to 200 bytes (UTF-8) without white
space, control characters, ',' or '"'.

Errors are MarkError. An invalid name also writes a line ``invalid REASON`` to the marks file, so
that wattcal-capture refuses the recording with that reason even when the program catches the
error and goes on (it would otherwise measure the whole run, start-up included). A marks file
that cannot be written (WATTCAL_MARKS naming a folder that does not exist, or one the program
cannot write, e.g. inside a container) is a MarkError naming the variable and the path.

The GPU: kernels run asynchronously, so each mark first waits for the GPU: by default through
PyTorch (torch.cuda.synchronize()) when PyTorch is already imported and CUDA is initialised;
pass ``sync=`` (any callable, or None for no wait) otherwise, e.g. ``sync=cupy.cuda.runtime.deviceSynchronize``.

Counters: each window is also an NVTX range of the same name (through torch.cuda.nvtx or the
``nvtx`` package, when either is importable), so that ``wattcal-capture --counters`` profiles
only the kernels inside the windows (ncu --nvtx --nvtx-include NAME/).
"""

import contextlib
import os
import sys
import time

__all__ = ["window", "Window", "begin", "end", "enabled", "MarkError"]


class MarkError(RuntimeError):
    """A mark that breaks the rules (a name that is not one word, windows that nest), or a marks
    file that cannot be written."""


_open_window = None


def enabled():
    """True when the program runs under wattcal-capture (WATTCAL_MARKS is set)."""
    return bool(os.environ.get("WATTCAL_MARKS"))


def _default_sync():
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _nvtx():
    torch = sys.modules.get("torch")
    if torch is not None:
        return torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    try:
        import nvtx  # the NVIDIA nvtx package

        return nvtx.push_range, nvtx.pop_range
    except ImportError:
        return None, None


_NAME_RULE = "one word: 1 to 200 bytes (UTF-8) without white space, control characters, ',' or '\"'"


def _valid_name(name):
    return (isinstance(name, str) and 0 < len(name.encode("utf-8", "surrogatepass")) <= 200
            and not any(c.isspace() or ord(c) < 0x21 or ord(c) == 0x7F or c in ',"' for c in name))


def _write_line(line):
    path = os.environ.get("WATTCAL_MARKS")
    if not path:
        return
    data = line.encode("utf-8", "backslashreplace")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise MarkError("wattcal marks: cannot write the marks file WATTCAL_MARKS=%s: %s (does its folder exist "
                        "where the program runs, and may the program write it?)" % (path, e.strerror)) from e
    try:
        if os.write(fd, data) != len(data):
            raise MarkError("wattcal marks: short write to the marks file WATTCAL_MARKS=%s" % path)
    finally:
        os.close(fd)


def _check_name(verb, name):
    if _valid_name(name):
        return
    shown = ascii(name)[:80]
    reason = "%s: the window name %s is not %s" % (verb, shown, _NAME_RULE)
    try:
        _write_line("invalid %s\n" % reason)  # so that the recording is refused, even if this error is caught
    except MarkError:
        pass
    raise MarkError("wattcal marks: cannot %s window %s: a name is %s" % (verb, shown, _NAME_RULE))


def _append(verb, name, steps=None):
    if os.environ.get("WATTCAL_MARKS"):
        tail = "" if steps is None else " %d" % steps
        _write_line("%s %s %d%s\n" % (verb, name, time.time_ns(), tail))


def _check_steps(name, steps):
    if steps is None:
        return
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        shown = ascii(steps)[:40]
        try:  # so that the recording is refused, even if this error is caught
            _write_line("invalid end: the window %s was given %s steps: a step count is a whole number >= 1\n"
                        % (ascii(name)[:80], shown))
        except MarkError:
            pass
        raise MarkError("wattcal marks: cannot end window %s with %s steps: a step count is a whole number >= 1"
                        % (ascii(name)[:80], shown))


def begin(name, sync=_default_sync):
    """Begins the window ``name`` once ``sync()`` has waited for the GPU."""
    global _open_window
    _check_name("begin", name)
    if _open_window is not None:
        raise MarkError("wattcal marks: 'begin %s' inside the open window '%s': windows do not nest" % (name, _open_window))
    if sync is not None:
        sync()
    push, _ = _nvtx()
    if push is not None:
        push(name)
    _append("begin", name)
    _open_window = name


def end(name, sync=_default_sync, steps=None):
    """Ends the window ``name`` once ``sync()`` has waited for the GPU; ``steps``: the steps
    (iterations, batches) the program ran inside it, a whole number >= 1, or None."""
    global _open_window
    _check_name("end", name)
    if _open_window != name:
        raise MarkError("wattcal marks: 'end %s' but the open window is %r" % (name, _open_window))
    _check_steps(name, steps)
    if sync is not None:
        sync()
    _append("end", name, steps)
    _open_window = None
    _, pop = _nvtx()
    if pop is not None:
        pop()


class Window:
    """What ``with window(...) as w`` yields: ``w.steps``, the steps written on the ``end`` mark
    (None for none), may be set or counted up inside the window."""

    def __init__(self, name, steps):
        self.name = name
        self.steps = steps


@contextlib.contextmanager
def window(name, sync=_default_sync, steps=None):
    """A marked window for the body of a ``with`` statement; ``steps`` (or the yielded object's
    ``steps``, set inside the window) is written on its ``end`` mark."""
    begin(name, sync)
    w = Window(name, steps)
    try:
        yield w
    finally:
        end(name, sync, steps=w.steps)
