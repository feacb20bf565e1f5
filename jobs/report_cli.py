"""``specsweep report``: a sweep's report from its Parquet log (``--parquet DIR`` or ``report DIR``) or its MLflow
experiment (``--experiment NAME``), ``--compare`` two folders, or ``--specbench`` (Spec-Bench speed.py's numbers
beside ours). The tables themselves are ``jobs/report/tables.py``; this module sits above both the report and the
MLflow reader so neither imports the other.

A folder's report is printed, then written to ``report.<format>`` whole or not at all (``write_texts``: a synced
temporary twin renamed over it, ``jobs/store/durable.py``). A write the machine refuses (a read-only folder, a full
disk) is one line naming the file (``SpecsweepError``: exit 2).
"""
from __future__ import annotations

import errno
import sys
from pathlib import Path

import pandas as pd

from actors.plan.roofline import parse as parse_roofline
from jobs.mlflow.read import read_experiment
from jobs.report.specbench import report_text
from jobs.report.tables import build_report, compare, folder_report
from jobs.store.output import record_written, write_texts
from policies.errors import SpecsweepError


def summary_from_mlflow(experiment: str, uri: str, output: str | None = None
                        ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One sweep of the experiment (the one into ``output``, else the latest): ``jobs.mlflow.read.read_experiment``."""

    return read_experiment(experiment, uri, output)


def main(a) -> int:
    if getattr(a, "folder", None) and not a.parquet:            # `report OUTPUT` = `report --parquet OUTPUT`
        a.parquet = a.folder
    if getattr(a, "specbench", False):                          # Spec-Bench speed.py's numbers beside ours
        folder = a.parquet or getattr(a, "output", None)
        if not folder:
            raise SpecsweepError("--specbench reads a sweep's output folder: specsweep report OUTPUT --specbench")

        sys.stdout.write(report_text(folder, a.format))
        return 0
    if not a.parquet and not a.experiment:
        raise SpecsweepError("report needs --parquet OUTPUT_FOLDER or --experiment NAME")
    if getattr(a, "costs", None) and (not a.parquet or parse_roofline(a.costs) is None):
        raise SpecsweepError(f"report --costs {a.costs}: give roofline:GPU[:Q] (e.g. roofline:h100:int4) with a sweep's "
                             "output folder")
    if a.parquet:
        try:
            text = folder_report(a.parquet, a.format, getattr(a, "costs", None))
        except OSError as e:           # the report writes gamma_table.csv into the folder before it prints
            if e.errno not in REFUSED:
                raise
            raise SpecsweepError(cannot_write(e.filename or a.parquet, e, "the report writes its tables into the "
                                              "folder, so none is printed")) from None
    else:
        summary, speed, frac = summary_from_mlflow(a.experiment, a.tracking_uri, getattr(a, "output", None))
        floor = None
        if "noise_floor" in summary and summary["noise_floor"].notna().any():   # only the floor itself is in MLflow
            floor = summary.groupby("pair", as_index=False)["noise_floor"].first()
            floor = floor.rename(columns={"noise_floor": "floor"})
        text = build_report(summary, speed, frac, a.format, None, floor)
    if a.compare:
        if not a.parquet:
            raise SpecsweepError("--compare works on Parquet folders: pass --parquet A --compare B")
        text += "\n" + compare(a.parquet, a.compare, a.format)
    sys.stdout.write(text)
    if a.parquet:
        path = Path(a.parquet) / f"report.{a.format}"
        try:                           # whole or not at all: a synced twin renamed over it (jobs/store/durable.py)
            record_written(path)
            write_texts({path: text})
        except OSError as e:
            raise SpecsweepError(cannot_write(path, e, "the report above is not saved")) from None
    return 0


REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT)   # the machine refused a write


def cannot_write(path, e: OSError, lost: str) -> str:
    """The one line for a write the machine refused: the path, why, what is lost, what to do."""
    return (f"cannot write {path} ({e.strerror or e}): {lost}; make the folder writable, or report a writable "
            "copy of it")
