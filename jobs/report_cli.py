"""``specsweep report``: a sweep's report from its Parquet log (``--parquet DIR`` or ``report DIR``) or its MLflow
experiment (``--experiment NAME``), ``--compare`` two folders, or ``--specbench`` (Spec-Bench speed.py's numbers
beside ours). The tables themselves are ``jobs/report/tables.py``; this module sits above both the report and the
MLflow reader so neither imports the other.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from actors.plan.roofline import parse as parse_roofline
from jobs.mlflow.read import read_experiment
from jobs.report.specbench import report_text
from jobs.report.tables import build_report, compare, folder_report
from jobs.store.output import record_written
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
        text = folder_report(a.parquet, a.format, getattr(a, "costs", None))
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
        record_written(Path(a.parquet) / f"report.{a.format}")
        (Path(a.parquet) / f"report.{a.format}").write_text(text)
    return 0
