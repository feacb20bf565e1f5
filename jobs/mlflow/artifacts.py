"""What a sweep puts where people look in the MLflow UI: each policy run's γ curve and the dataset.

Rules:
- **γ curve.** Every speculative policy run gets ``gamma_curve.png``: its throughput against
  initial γ, with the 95 % paired-bootstrap interval as error bars where the summary has one
  (``throughput_lo``/``throughput_hi``), and the pair's ``ar`` throughput as a dashed line.
  Drawn with matplotlib's Agg canvas (no display, no global pyplot state).
- **Dataset.** The questions a sweep runs are logged as an MLflow dataset input (context
  ``eval``) of the sweep run and of every policy run, so the runs table's Datasets column
  names them. Name = the config's ``dataset.source`` (``sample``, ``specbench`` or the path as
  written); digest = hash of the selected questions (id, category, turns), so two selections
  of one source differ; source = the file the questions come from (the packaged sample, the
  Spec-Bench download address, or the resolved path); profile = rows, turns, categories; the
  selection (categories, limits, ids) is the input tag ``specsweep.selection``. MLflow keeps
  one input per (run, dataset), so logging it again on resume adds nothing.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd

from jobs.dataset import SAMPLE, SPECBENCH_URL
from jobs.dataset_identity import content_digest
from jobs.redact import redact

CURVE = "gamma_curve.png"


def gamma_curve_png(points: pd.DataFrame, baseline: float | None, title: str, path: Path) -> Path:
    """Throughput against initial γ (``points``: gamma, throughput[, throughput_lo, throughput_hi]) as a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # heavy: matplotlib
    from matplotlib.figure import Figure  # heavy: matplotlib

    pts = points.sort_values("gamma")
    fig = Figure(figsize=(5, 3.4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    y = pts["throughput"].astype(float)
    if {"throughput_lo", "throughput_hi"} <= set(pts.columns):
        err = [(y - pts["throughput_lo"]).clip(lower=0).fillna(0), (pts["throughput_hi"] - y).clip(lower=0).fillna(0)]
        ax.errorbar(pts["gamma"], y, yerr=err, marker="o", capsize=3, label="throughput (95 % interval)")
    else:
        ax.plot(pts["gamma"], y, marker="o", label="throughput")
    if baseline is not None:
        ax.axhline(float(baseline), color="grey", ls="--", label="ar")
    ax.set_title(title[:70], fontsize=9)
    ax.set_xticks(sorted({int(g) for g in pts["gamma"]}))
    ax.set_xlabel("initial γ")
    ax.set_ylabel("tokens / s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return path


def log_gamma_curve(client, run_id: str, points: pd.DataFrame, baseline: float | None, title: str) -> None:
    """Draw :func:`gamma_curve_png` and log it as the run's ``gamma_curve.png`` (replacing an older one)."""
    if points is None or points.empty or not points["throughput"].notna().any():
        return
    with tempfile.TemporaryDirectory(prefix="specsweep-curve-") as d:
        client.log_artifact(run_id, str(gamma_curve_png(points, baseline, title, Path(d) / CURVE)))


def task_questions(task: dict) -> list[dict]:
    """The questions a task decodes: its block (a batch task) or its one question."""
    return task["questions"] if "questions" in task else [task["question"]]


def questions_frame(tasks: list[dict]) -> pd.DataFrame:
    """The questions of a sweep's tasks, one row each: question_id, category, turns (count)."""
    seen = {}
    for q in (q for t in tasks for q in task_questions(t)):
        seen.setdefault(int(q["question_id"]), (q["category"], list(q["turns"])))
    return pd.DataFrame([{"question_id": qid, "category": c, "turns": len(turns)}
                         for qid, (c, turns) in sorted(seen.items())], columns=["question_id", "category", "turns"])


def dataset_entity(source: str, tasks: list[dict]):
    """The MLflow ``Dataset`` entity of the questions in ``tasks`` (see the module docstring)."""
    from mlflow.entities import Dataset  # heavy: mlflow


    source = str(source)
    digest = content_digest((q["question_id"], q["category"], q["turns"]) for t in tasks for q in task_questions(t))
    if source == "sample":
        kind, where = "local", {"uri": str(SAMPLE)}
    elif source == "specbench":
        kind, where = "http", {"url": SPECBENCH_URL}
    else:
        kind, where = "local", {"uri": redact(Path(source).expanduser().resolve())}
    df = questions_frame(tasks)
    schema = {"mlflow_colspec": [{"type": "long", "name": "question_id", "required": True},
                                 {"type": "string", "name": "category", "required": True},
                                 {"type": "long", "name": "turns", "required": True}]}
    profile = {"num_rows": len(df), "turns": int(df["turns"].sum()) if len(df) else 0,
               "categories": int(df["category"].nunique()) if len(df) else 0}
    return Dataset(name=redact(source)[:500], digest=digest, source_type=kind, source=json.dumps(where),
                   schema=json.dumps(schema), profile=json.dumps(profile))


def log_dataset(client, run_ids, entity, selection: str) -> None:
    """Log ``entity`` as the ``eval`` dataset input of each run in ``run_ids``."""
    from mlflow.entities import DatasetInput, InputTag  # heavy: mlflow

    tags = [InputTag("mlflow.data.context", "eval"), InputTag("specsweep.selection", redact(selection)[:500])]
    for run_id in run_ids:
        client.log_inputs(run_id, datasets=[DatasetInput(entity, tags)])
