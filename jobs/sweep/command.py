"""``specsweep sweep CONFIG.yaml`` = ``python -m jobs.sweep CONFIG.yaml``: flags, exit statuses, and the sweeps of a
temperature list one after another (then the GT paper's Figure 3 table, ``jobs/report/temperatures.py``).
"""
from __future__ import annotations

import errno
import json
import sys
from pathlib import Path

from jobs.config import SweepConfig
from jobs.config.lists import load_configs
from jobs.inputs import OneLineParser, add_sweep_flags
from jobs.report.temperatures import figure3_table, figure3_text
from jobs.store.failures import internal_error_log, root_cause
from jobs.sweep.driver import EXIT_BAD_INPUT, EXIT_FAILED_ROWS, EXIT_INTERNAL, EXIT_OK, outcome, run_sweep  # noqa: F401  (EXIT_FAILED_ROWS: the statuses main returns)
from jobs.sweep.signals import install, interrupted, restore, say
from policies.errors import SpecsweepError


def _parser() -> OneLineParser:
    """The driver's flags."""
    ap = OneLineParser(prog="python -m jobs.sweep")
    add_sweep_flags(ap)
    ap.add_argument("--verbose", action="store_true", help="also print the per-γ, replay and cost tables at the end")
    return ap


def main(argv=None) -> int:
    """Exit status: 0 every row ok; 2 bad input (one line); 3 finished with failed rows or tasks;
    4 an unexpected internal error (one line, traceback in a file); 130 SIGINT, 143 SIGTERM.

    A config listing several temperatures runs one sweep per temperature (:func:`run_temperatures`)."""
    try:
        a = _parser().parse_args(argv)
    except SpecsweepError as e:           # a bad flag: one line, not the usage text
        say(f"specsweep: error: {e}")
        return EXIT_BAD_INPUT
    previous = install()
    try:
        code, cfgs = _guarded(lambda: load_configs(a.config))
        if code is not None:
            return code
        if len(cfgs) > 1:
            return run_temperatures(cfgs, a)
        code, res = _guarded(lambda: _run(cfgs[0], a), cfgs[0])
    finally:
        restore(previous)
    if code is not None:
        return code
    if a.dry_run:
        return EXIT_OK
    if a.json:
        print(json.dumps(res))
    return _outcome_code(res)


def _run(cfg: SweepConfig, a) -> dict:
    """One sweep as the command line asks for it."""
    return run_sweep(cfg, address=a.address, fresh=a.fresh, dry_run=a.dry_run, handle_sigterm=True,
                     verbose=a.verbose, backend=a.backend, wait_for_gpus_s=a.wait_for_gpus)


def _guarded(work, cfg: SweepConfig | None = None):
    """``(None, work())``, or ``(exit status, None)`` after one line on stderr: 2 bad input, 130/143 an interrupt,
    4 an unexpected error (its traceback in a file, under ``cfg``'s output folder when there is one)."""
    try:
        return None, work()
    except SpecsweepError as e:
        say(f"specsweep: error: {e}")
        return EXIT_BAD_INPUT, None
    except KeyboardInterrupt as e:
        code, line = interrupted(e)
        say(line)
        return code, None
    except ModuleNotFoundError as e:      # the environment, not a bug: a dependency was not installed
        say(f"specsweep: error: the package {e.name!r} is not installed; install specsweep's dependencies "
            "(pip install -c constraints.txt torch==2.13.0 -e . from the repository, as the README says)")
        return EXIT_BAD_INPUT, None
    except OSError as e:
        if e.errno not in STORAGE_ERRNOS:
            return _internal(cfg, e)
        where = f" {e.filename}" if e.filename else ""
        fix = ("move the file away or choose another output folder" if e.errno in IN_THE_WAY
               else "free space or fix the folder's permissions")
        say(f"specsweep: error: cannot write{where}: {e.strerror or type(e).__name__}; finished tasks stay in the "
            f"log: {fix}, then run the same command again to resume")
        return EXIT_BAD_INPUT, None
    except Exception as e:  # a bug, not bad input: one line here, the traceback in a file
        return _internal(cfg, e)


# the machine's storage refusing a write: the environment, not a bug (one line, exit 2)
# a file where specsweep needs a folder (OUTPUT/log a file) or the reverse: the user's file is in the way
IN_THE_WAY = {errno.EEXIST, errno.ENOTDIR, errno.EISDIR}
STORAGE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT} | IN_THE_WAY


def _internal(cfg, e: BaseException):
    path = internal_error_log(cfg, e)
    where = f"full traceback in {path}" if path is not None else "its traceback could not be written either"
    say(f"specsweep: internal error: {root_cause(e)} ({where})")
    return EXIT_INTERNAL, None


def _outcome_code(res: dict) -> int:
    """The exit status of a finished sweep, its failure line (if any) on stderr."""
    code, line = outcome(res)
    if line:
        say(f"specsweep: {line}")
    return code


def run_temperatures(cfgs: list[SweepConfig], a) -> int:
    """The sweeps of a temperature list, one after another, each exactly as a single sweep runs (its own output
    folder, lock and report), after a line ``temperature i/n: T=<t> → <output>``; then ``figure3.csv`` in the
    folder above them and its table on stderr (:mod:`jobs.report.temperatures`).

    Exit status: the worst of the runs (3 if any finished with failures, else 0). A run refused (2), an internal
    error (4) or an interrupt (130/143) ends the whole sweep with its status: the temperatures after it do not run.
    ``--json`` prints ``{"temperatures": [{"temperature": t, **result}, ...]}``."""
    results, worst = [], EXIT_OK
    for i, cfg in enumerate(cfgs, 1):
        t = cfg.generation["temperature"]
        say(f"specsweep: temperature {i}/{len(cfgs)}: T={t + 0.0:g} → {cfg.output}")
        code, res = _guarded(lambda: _run(cfg, a), cfg)
        if code is not None:
            return code
        if not a.dry_run:
            worst = max(worst, _outcome_code(res))
        results.append({"temperature": t, **res})
    if a.dry_run:
        return EXIT_OK
    code, _ = _guarded(lambda: write_figure3([(r["temperature"], Path(c.output)) for r, c in zip(results, cfgs)],
                                             Path(cfgs[0].output).parent), cfgs[0])
    if a.json:
        print(json.dumps({"temperatures": results}))
    return worst if code is None else max(worst, code)


def write_figure3(outputs: list[tuple[float, Path]], folder: Path) -> Path:
    """``folder/figure3.csv`` from the temperatures' output folders, its table printed to stderr; returns the path."""
    df = figure3_table(outputs)
    path = folder / "figure3.csv"
    df.to_csv(path, index=False)
    print(figure3_text(df), file=sys.stderr)
    say(f"specsweep: Figure 3 table: {path}")
    return path
