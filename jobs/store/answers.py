"""Spec-Bench-compatible answer files (``model_answer/*.jsonl``; Spec-Bench, Xia et al. 2024).

One line per question: question_id, category, answer_id, model_id,
choices = [{index, turns, decoding_steps, new_tokens, wall_time, accept_lengths}],
tstamp. As in Spec-Bench, ``decoding_steps``, ``new_tokens`` and ``wall_time`` hold
one entry per turn and ``accept_lengths`` is the flat list over all turns, so
Spec-Bench's ``evaluation/speed.py`` reads our files unchanged. As FastChat does,
``answer_id`` is random per answer (22 characters) and ``tstamp`` is when the question's
last turn finished (the row's ``tstamp``; the file-write time only for rows that lack one).
``model_id`` names what ran: target, draft, policy spec and initial γ (``ar``: target
and policy only).
"""
from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pandas as pd

from jobs.store.durable import durable_replace
from jobs.store.output import record_written


def model_id_of(row) -> str:
    """``target=T draft=D policy=SPEC gamma=G`` (``ar``: ``target=T policy=ar``)."""
    target = row.get("target") or row.get("pair")
    if row.get("policy") == "ar" or row.get("policy_spec") == "ar":
        return f"target={target} policy=ar"
    return f"target={target} draft={row.get('draft')} policy={row.get('policy_spec')} gamma={int(row.get('gamma'))}"


def answer_records(rows: pd.DataFrame, model_id: str) -> list[dict]:
    """Answer lines for the rows of one config and repeat."""
    out = []
    for qid, part in rows.sort_values(["question_id", "turn"]).groupby("question_id", sort=True):
        stamps = part["tstamp"].dropna() if "tstamp" in part else []
        out.append({
            "question_id": int(qid),
            "category": str(part["category"].iloc[0]),
            "answer_id": uuid.uuid4().hex[:22],
            "model_id": model_id,
            "choices": [{
                "index": 0,
                "turns": [str(t) for t in part["text"]],
                "decoding_steps": [int(x) for x in part["decoding_steps"]],
                "new_tokens": [int(x) for x in part["new_tokens"]],
                "wall_time": [float(x) for x in part["wall_time"]],
                "accept_lengths": [int(a) for xs in part["accept_lengths"] for a in xs],
            }],
            "tstamp": float(max(stamps)) if len(stamps) else time.time(),
        })
    return out


def write_answers(path: Path, records: list[dict]) -> Path:
    """Write answer lines atomically to ``path`` (noted first in a sweep output's manifest)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record_written(path)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    durable_replace(tmp, path)
    return path


def read_answers(path: Path) -> list[dict]:
    """The answer lines of a file."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def answers_filename(pair: str, policy_spec: str, gamma: int, repeat: int = 0) -> str:
    """``PAIR__SPEC__gG__rR.jsonl`` with every unsafe character replaced."""
    safe = re.sub(r"[^A-Za-z0-9_.+=-]+", "_", f"{pair}__{policy_spec}__g{gamma}__r{repeat}")
    return safe + ".jsonl"


def write_all(df: pd.DataFrame, folder: Path) -> list[Path]:
    """One answer file per (pair, policy, initial γ, repeat) of the successful rows."""
    ok = df[df["status"] == "ok"] if "status" in df else df
    if "ar_timing" in ok:                        # the closing ar run of each task is a noise control, not an answer
        ok = ok[ok["ar_timing"].fillna("") != "last"]
    paths = []
    for (pair, spec, gamma, rep), part in ok.groupby(["pair", "policy_spec", "gamma", "repeat"]):
        model_id = model_id_of(part.iloc[0].to_dict())
        paths.append(write_answers(folder / answers_filename(pair, spec, int(gamma), int(rep)), answer_records(part, model_id)))
    return paths
