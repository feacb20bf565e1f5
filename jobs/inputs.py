"""Command-line inputs checked where they are read, before any model loads: flags, cost files and text files
(the places a command writes: ``jobs/store/output.py``'s ``check_writable``). Each refusal is one :class:`SpecsweepError` line; the CLI prints it as ``specsweep: error: …``
and exits 2.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from policies.cost_format import check_cost_dict
from policies.costs import CostModel
from policies.errors import SpecsweepError

DEFAULT_TARGET = "smollm2-135m"                  # the embedded pair's target (an alias of actors/loading/models.py)
BACKEND_HELP = ("ray (default): every pair's actors side by side on a Ray cluster; inprocess: the same actors and tasks "
                "in this process, one task at a time, no Ray (tests, debugging, and timings that must not share the CPU "
                "cores with the other pairs' actors: docs/sweeps.md)")


WAIT_HELP = ("on a cluster with an autoscaler (ray_cluster.yaml starts with no GPU workers): ask it for the GPU "
             "actors' nodes and wait up to SECONDS for them (default 0: use the cluster as it is)")


def add_sweep_flags(ap: argparse.ArgumentParser) -> None:
    """The sweep's flags, the same for ``specsweep sweep`` and ``python -m jobs.sweep``."""
    ap.add_argument("config")
    ap.add_argument("--address", default=None, help="Ray address (default: RAY_ADDRESS or a new local cluster)")
    ap.add_argument("--fresh", action="store_true", help="discard the output folder's results and start over")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    ap.add_argument("--json", action="store_true", help="end with the sweep's result as one JSON object on stdout")
    ap.add_argument("--backend", choices=["ray", "inprocess"], default="ray", help=BACKEND_HELP)
    ap.add_argument("--wait-for-gpus", type=_seconds, default=0, metavar="SECONDS", help=WAIT_HELP)


def _seconds(text: str) -> float:
    """A wait in seconds: a number from 0 to 86400 (one day)."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0 <= v <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to 86400")
    return v


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose every complaint (a bad type, a missing or unknown flag) is one
    :class:`SpecsweepError` line naming the flag, not the whole usage text; subcommand parsers inherit it."""

    def error(self, message: str):
        """Raise the complaint as one line (``specsweep: error: …`` and exit status 2 in ``jobs/cli.py``)."""
        first = " ".join(message.split())
        raise SpecsweepError(f"{first[:300]} (see `{self.prog} --help`)")


def read_cost_file(path: str) -> CostModel:
    """The cost model stored in ``path`` (``specsweep calibrate --out``), every time in it checked finite and
    positive (``policies/costs.py``) before any model loads."""
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        raise SpecsweepError(f"--costs {path}: missing or not valid JSON ({type(e).__name__})") from None
    check_cost_dict(d, f"--costs {path}")
    try:
        return CostModel.from_dict(d)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SpecsweepError(f"--costs {path}: malformed cost model ({type(e).__name__}: {str(e)[:80]})") from None


def check_text_file(path: str, flag: str) -> str:
    """The UTF-8 text of ``path``; one line when it is missing, a folder or binary data."""
    p = Path(path)
    if not p.is_file():
        raise SpecsweepError(f"{flag} file {path} does not exist or is not a file")
    try:
        return p.read_bytes().decode("utf-8")
    except OSError as e:
        raise SpecsweepError(f"{flag} file {path} cannot be read ({e.strerror or type(e).__name__})") from None
    except UnicodeDecodeError as e:
        raise SpecsweepError(f"{flag} file {path} is not UTF-8 text (byte {e.start}): give a plain text file") from None
