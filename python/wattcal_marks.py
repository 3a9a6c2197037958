"""wattcal marks for Python programs: mark the windows of a run that
``wattcal-capture --app NAME -- python program.py`` should measure, so that start-up, imports,
data loading and warm-up are left out.

    import wattcal_marks                      # PYTHONPATH=<wattcal>/python

    for step in range(100):
        with wattcal_marks.window("steady"):  # begin steady ... end steady
            train_step()

When the environment has WATTCAL_MARKS=FILE (wattcal-capture sets it for the program it runs),
each mark appends one line to FILE with a single os.write in append mode::

    begin NAME NANOSECONDS
    end NAME NANOSECONDS

NANOSECONDS is time.time_ns(), CLOCK_REALTIME, the clock of wattcal-capture's NVML sampler.
Without WATTCAL_MARKS nothing is written, so the program runs unchanged outside wattcal-capture.
Windows must not nest (an error), and NAME is one word.

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

__all__ = ["window", "begin", "end", "enabled", "MarkError"]


class MarkError(RuntimeError):
    """A mark that breaks the rules: a name that is not one word, or windows that nest."""


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


def _check_name(name):
    if not isinstance(name, str) or not name or len(name) > 200 or any(c.isspace() or ord(c) < 0x21 or ord(c) == 0x7F for c in name):
        raise MarkError("wattcal marks: the window name must be one word, got %r" % (name,))


def _append(verb, name):
    path = os.environ.get("WATTCAL_MARKS")
    if not path:
        return
    line = ("%s %s %d\n" % (verb, name, time.time_ns())).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        if os.write(fd, line) != len(line):
            raise MarkError("wattcal marks: short write to %s" % path)
    finally:
        os.close(fd)


def begin(name, sync=_default_sync):
    """Begins the window ``name`` once ``sync()`` has waited for the GPU."""
    global _open_window
    _check_name(name)
    if _open_window is not None:
        raise MarkError("wattcal marks: 'begin %s' inside the open window '%s': windows do not nest" % (name, _open_window))
    if sync is not None:
        sync()
    push, _ = _nvtx()
    if push is not None:
        push(name)
    _append("begin", name)
    _open_window = name


def end(name, sync=_default_sync):
    """Ends the window ``name`` once ``sync()`` has waited for the GPU."""
    global _open_window
    _check_name(name)
    if _open_window != name:
        raise MarkError("wattcal marks: 'end %s' but the open window is %r" % (name, _open_window))
    if sync is not None:
        sync()
    _append("end", name)
    _open_window = None
    _, pop = _nvtx()
    if pop is not None:
        pop()


@contextlib.contextmanager
def window(name, sync=_default_sync):
    """A marked window for the body of a ``with`` statement."""
    begin(name, sync)
    try:
        yield
    finally:
        end(name, sync)
