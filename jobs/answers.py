"""Spec-Bench-compatible answer files (``model_answer/*.jsonl``, GUIDE §4).

One line per question: question_id, category, answer_id, model_id,
choices = [{index, turns, decoding_steps, new_tokens, wall_time, accept_lengths}],
tstamp. As in Spec-Bench, ``decoding_steps``, ``new_tokens`` and ``wall_time`` hold
one entry per turn and ``accept_lengths`` is the flat list over all turns, so
Spec-Bench's ``evaluation/speed.py`` reads our files unchanged.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pandas as pd


def answer_records(rows: pd.DataFrame, model_id: str) -> list[dict]:
    """Answer lines for the rows of one config and repeat."""
    out = []
    for qid, part in rows.sort_values(["question_id", "turn"]).groupby("question_id", sort=True):
        out.append({
            "question_id": int(qid),
            "category": str(part["category"].iloc[0]),
            "answer_id": uuid.uuid5(uuid.NAMESPACE_URL, f"{model_id}/{qid}").hex[:22],
            "model_id": model_id,
            "choices": [{
                "index": 0,
                "turns": [str(t) for t in part["text"]],
                "decoding_steps": [int(x) for x in part["decoding_steps"]],
                "new_tokens": [int(x) for x in part["new_tokens"]],
                "wall_time": [float(x) for x in part["wall_time"]],
                "accept_lengths": [int(a) for xs in part["accept_lengths"] for a in xs],
            }],
            "tstamp": time.time(),
        })
    return out


def write_answers(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    tmp.replace(path)
    return path


def read_answers(path: Path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def answers_filename(pair: str, policy_spec: str, gamma: int, repeat: int = 0) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.+=-]+", "_", f"{pair}__{policy_spec}__g{gamma}__r{repeat}")
    return safe + ".jsonl"


def write_all(df: pd.DataFrame, folder: Path) -> list[Path]:
    """One answer file per (pair, policy, initial γ, repeat) of the successful rows."""
    ok = df[df["status"] == "ok"] if "status" in df else df
    if "ar_timing" in ok:                        # the closing ar run of each task is a noise control, not an answer
        ok = ok[ok["ar_timing"].fillna("") != "last"]
    paths = []
    for (pair, spec, gamma, rep), part in ok.groupby(["pair", "policy_spec", "gamma", "repeat"]):
        model_id = f"{pair}-{spec}-g{gamma}"
        paths.append(write_answers(folder / answers_filename(pair, spec, int(gamma), int(rep)), answer_records(part, model_id)))
    return paths
