"""SIGINT and SIGTERM at every stage of a sweep: one orderly stop, exit status 130 or 143, one line on stderr.

Rules:

* ``python -m jobs.sweep`` installs the handlers before it imports the driver (seconds: torch), so a signal
  during start-up, the config and model checks, Ray's start, the actors' start, the tasks or the report ends
  the same way.
* SIGINT raises ``KeyboardInterrupt`` (Python's own handler; Ray leaves it alone) and SIGTERM raises
  :class:`Terminated` (a ``KeyboardInterrupt``), so every ``with`` and ``finally`` on the way out runs: actors
  stopped, MLflow runs closed as KILLED, the sweep's own Ray cluster shut down, the output lock released.
  Finished tasks are on disk already (one atomic file each). A sweep started with SIGINT ignored (a shell's
  background job) keeps ignoring it, as Python does.
* ``ray.init`` replaces the SIGTERM handler with one that raises ``SystemExit(15)``: :func:`ray_start` turns that
  into :class:`Terminated` and puts ours back once Ray is up.
* A signal that lands while Python runs a weakref callback or a ``__del__`` (an import's module-lock clean-up, a
  garbage collection) has its exception swallowed: Python only reports it as unraisable and carries on. The hook
  :func:`install` sets keeps that report off stderr and remembers the interrupt; :func:`raise_if_swallowed`,
  called at the sweep's checkpoints (the driver imported; the models checked, before a local MLflow store is made;
  before the output folder is locked; actors started; each task done; the sweep's end — its report and MLflow runs
  written: exit 130 or 143, not 0), raises it there.
"""
from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
import threading
import time

EXIT_SIGINT, EXIT_SIGTERM = 130, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into the same orderly stop as Ctrl-C."""


_sigterm_seen: list[float] = []   # Ray re-raises an exception from a signal handler as KeyboardInterrupt
_swallowed: list[KeyboardInterrupt] = []   # interrupts raised where Python could not propagate them


def _unraisable(report) -> None:
    """``sys.unraisablehook`` while a sweep runs: an interrupt is remembered (module docstring), anything else goes
    to Python's own hook."""
    if isinstance(report.exc_value, KeyboardInterrupt):
        _swallowed.append(report.exc_value)
    else:
        sys.__unraisablehook__(report)


def raise_if_swallowed() -> None:
    """Raise the interrupt a signal raised where Python swallowed it (module docstring); nothing when none was."""
    if _swallowed:
        e = _swallowed[0]
        _swallowed.clear()
        raise e


def on_sigterm(signum, frame):
    """The SIGTERM handler: note the signal and raise :class:`Terminated`."""
    _sigterm_seen.append(time.time())
    raise Terminated()


def main_thread() -> bool:
    """Whether this is the main thread (the only one that may install signal handlers)."""
    return threading.current_thread() is threading.main_thread()


def install():
    """SIGTERM → :class:`Terminated` (SIGINT keeps Python's ``KeyboardInterrupt``) and the unraisable hook; returns
    what they replaced for :func:`restore` (None off the main thread, where nothing is installed)."""
    if not main_thread():
        return None
    _sigterm_seen.clear()
    hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    return signal.signal(signal.SIGTERM, on_sigterm), hook


def restore(previous) -> None:
    """Put back the SIGTERM handler and the unraisable hook :func:`install` replaced."""
    if previous is not None:
        signal.signal(signal.SIGTERM, previous[0])
        sys.unraisablehook = previous[1]


@contextlib.contextmanager
def ray_start(handle_sigterm: bool):
    """Around ``ray.init``: with ``handle_sigterm``, Ray's ``SystemExit(SIGTERM)`` becomes :class:`Terminated`
    and SIGTERM raises :class:`Terminated` again once Ray is up (Ray's own handler would abort the driver)."""
    try:
        yield
    except SystemExit as e:
        if handle_sigterm and e.code == signal.SIGTERM:
            _sigterm_seen.append(time.time())
            raise Terminated() from None
        raise
    finally:
        if handle_sigterm and main_thread():
            signal.signal(signal.SIGTERM, on_sigterm)


def _forget_handled_interrupt() -> None:
    """CPython marks a ``KeyboardInterrupt`` that left code run through its C API (``PyRun_*``, as some extension
    modules run Python code) as unhandled, and then ends the process by SIGINT whatever status it returns (seen
    once as -2 instead of 130). The sweep has handled it: clear the mark. No-op where it cannot be reached."""
    try:
        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (AttributeError, ValueError, OSError):
        pass


def interrupted(e: KeyboardInterrupt) -> tuple[int, str]:
    """Exit status and the one line for a sweep stopped by SIGINT (130) or SIGTERM (143)."""
    _forget_handled_interrupt()
    if isinstance(e, Terminated) or _sigterm_seen:
        return EXIT_SIGTERM, "specsweep: terminated (SIGTERM); finished tasks are kept in the log: run again to resume"
    return EXIT_SIGINT, "specsweep: interrupted; finished tasks are kept in the log: run again to resume"


def say(line: str) -> None:
    """Print one line on stderr in one write: a signal handler runs between two writes, so ``print``'s separate
    newline could be cut off and the stop line glued to it."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def run_main(load_main) -> int:
    """Install the handlers, then ``load_main()()`` (importing the driver happens inside): a signal at any point,
    the import included, exits 130 or 143 with one line."""
    previous = install()
    try:
        main = load_main()
        raise_if_swallowed()
        code = main()
        raise_if_swallowed()            # swallowed while the report and MLflow runs were written: the sweep was stopped
        return code
    except KeyboardInterrupt as e:
        code, line = interrupted(e)
        say(line)
        return code
    finally:
        restore(previous)
