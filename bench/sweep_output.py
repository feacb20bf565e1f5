"""The command line of the benches that read a finished sweep's output folder (no model loaded):
``python -m bench.NAME OUTPUT`` prints one table, or one line naming what is missing and exits 2."""
from __future__ import annotations

import argparse
import sys
from typing import Callable

import pandas as pd

from jobs.store.parquet_log import existing_log
from policies.errors import SpecsweepError


def run_on_output(name: str, doc: str, argv, build: Callable[[str], pd.DataFrame],
                  render: Callable[[pd.DataFrame], str], empty: str) -> int:
    """Parse ``OUTPUT`` from ``argv``, build the table from the folder (``build(folder)``) and print
    ``render(table)``; 2 with one line when the folder is not a sweep's, cannot be read, or gives no table
    (``empty``: what the folder lacks)."""
    ap = argparse.ArgumentParser(prog=f"python -m bench.{name}", description=doc.split("\n\n")[0])
    ap.add_argument("output", help="a sweep's output folder with live rows")
    a = ap.parse_args(argv)
    try:
        existing_log(a.output)
        t = build(a.output)
    except SpecsweepError as e:
        print(f"bench.{name}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"bench.{name}: cannot read {a.output!r}: {e}", file=sys.stderr)
        return 2
    if t.empty:
        print(f"bench.{name}: {a.output!r} holds no {empty}", file=sys.stderr)
        return 2
    print(render(t))
    return 0
