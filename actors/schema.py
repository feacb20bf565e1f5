"""The Arrow schema of one result row: question × turn × config × repeat.

Every task returns a ``pyarrow.Table`` with exactly these columns; the Parquet log,
MLflow summaries and reports all read them. A failed task becomes rows with
``status = "failed"`` and the reason in ``error``.
"""
from __future__ import annotations

import pyarrow as pa

INT_LIST = pa.list_(pa.int32())
SCHEMA = pa.schema([
    ("task_key", pa.string()),        # identity used to resume: pair|question|block
    ("config_key", pa.string()),      # pair|policy_spec|gamma
    ("pair", pa.string()),
    ("target", pa.string()),
    ("draft", pa.string()),
    ("policy", pa.string()),
    ("policy_spec", pa.string()),     # name:params as built (defaults filled in)
    ("params", pa.string()),          # JSON
    ("gamma", pa.int32()),            # initial γ (0 for ar)
    ("ar_timing", pa.string()),       # ar only: "first" (the baseline) or "last" (the noise control); "" otherwise
    ("repeat", pa.int32()),
    ("seed", pa.int64()),
    ("temperature", pa.float64()),
    ("question_id", pa.int64()),
    ("category", pa.string()),
    ("turn", pa.int32()),
    ("new_tokens", pa.int32()),
    ("wall_time", pa.float64()),
    ("tstamp", pa.float64()),         # unix time when this turn finished (Spec-Bench answer tstamp)
    ("prefill_time", pa.float64()),
    ("draft_time", pa.float64()),
    ("verify_time", pa.float64()),
    ("decoding_steps", pa.int32()),
    ("target_calls", pa.int32()),
    ("accept_lengths", INT_LIST),
    ("drafted", INT_LIST),
    ("accepted", INT_LIST),
    ("gammas", INT_LIST),
    ("text", pa.string()),
    ("token_ids", INT_LIST),          # generated ids (token views)
    ("prompt_ids", INT_LIST),         # the rendered prompt of this turn
    ("status", pa.string()),
    ("error", pa.string()),
    ("device", pa.string()),
    ("actor", pa.string()),
    ("versions", pa.string()),        # JSON: torch, transformers, specsweep
    ("engine", pa.string()),          # eager | static | compiled (actors/runners.py)
    ("peak_gpu_bytes", pa.int64()),   # peak GPU memory allocated by the actor so far, all its GPUs (0 on CPU)
    ("mode", pa.string()),            # "live" (generated and timed) or "replay" (from the ar run's trace; wall_time
                                      # predicted by the actor's cost model); null in logs written before replay
])


def config_key(pair: str, policy_spec: str, gamma: int) -> str:
    return f"{pair}|{policy_spec}|{gamma}"


def to_table(rows: list[dict]) -> pa.Table:
    cols = {f.name: [r.get(f.name) for r in rows] for f in SCHEMA}
    return pa.Table.from_pydict(cols, schema=SCHEMA)
