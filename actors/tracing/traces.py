"""Replay traces as data: a prompt's reference output and the draft's rollouts along it, and their Parquet files.

A :class:`Trace` holds, for one prompt, the reference y_1 … y_N (the target-only greedy output, what ``ar``
emits) and whether it ended with an EOS, and for every position j = 0 … N − 1 the draft's :class:`Rollout` from
prompt + y_<j with what a policy may read per proposal (q(x_i), max q, H(q) in nats). How rollouts are computed
is ``actors/rollouts.py``'s docstring (each drafter kind records its own, ``actors/drafter_kinds/``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from policies.errors import SpecsweepError

TRACE_VERSION = 1


@dataclass
class Rollout:
    """The draft's greedy continuation from one reference position."""

    tokens: list[int] = field(default_factory=list)
    q_tokens: list[float] = field(default_factory=list)   # q(x_i)
    q_max: list[float] = field(default_factory=list)      # max q at proposal i
    entropy: list[float] = field(default_factory=list)    # H(q) in nats at proposal i

    def __len__(self) -> int:
        return len(self.tokens)

    def tail(self) -> "Rollout":
        """The rollout without its first proposal (the next position's, when x_1 = y_j)."""
        return Rollout(self.tokens[1:], self.q_tokens[1:], self.q_max[1:], self.entropy[1:])

    def add(self, x: int, q: float, qmax: float, h: float) -> None:
        self.tokens.append(int(x))
        self.q_tokens.append(float(q))
        self.q_max.append(float(qmax))
        self.entropy.append(float(h))


@dataclass
class Trace:
    """One prompt's reference output and the draft's rollouts along it (see the module docstring)."""

    prompt_ids: list[int]
    reference: list[int]                  # y_1 … y_N, the target-only greedy output
    finished_by_eos: bool
    max_new_tokens: int                   # the budget the reference was generated under
    max_draft: int | None                 # L; None = rollouts run to the remaining budget
    eos_ids: list[int]
    rollouts: list[Rollout]               # one per reference position j = 0 … N − 1
    pair: str = ""                        # pair label
    tokenizer_hash: str = ""
    target: str = ""
    draft: str = ""
    prefill_time: float = 0.0             # measured prefill of the reference (`ar`) run, seconds
    ar_step_times: list[float] = field(default_factory=list)   # measured per-token step times of that run
    ar_wall_time: float = 0.0
    key: str = ""                         # caller's id of the turn (question id, turn)
    meta: dict = field(default_factory=dict)

    @property
    def new_tokens(self) -> int:
        return len(self.reference)

    def check(self) -> None:
        if len(self.rollouts) != len(self.reference):
            raise SpecsweepError(f"trace {self.key!r} is corrupt: {len(self.rollouts)} rollouts for "
                                 f"{len(self.reference)} reference tokens")


def tokenizer_fingerprint(tokenizer) -> str:
    """sha256 (16 hex digits) of the tokenizer's vocabulary and special tokens: two traces are comparable iff equal."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    special = sorted((str(k), str(v)) for k, v in (getattr(tokenizer, "special_tokens_map", {}) or {}).items())
    blob = json.dumps([vocab, special], ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# ---------------------------------------------------------------- Arrow / Parquet

_SCALARS = ("finished_by_eos", "max_new_tokens", "pair", "tokenizer_hash", "target", "draft", "prefill_time",
            "ar_wall_time", "key")


def traces_to_table(traces: Sequence[Trace]):
    """One row per trace; rollouts as list<list<…>> columns; ``max_draft`` −1 = the whole budget."""
    cols = {
        "prompt_ids": pa.array([t.prompt_ids for t in traces], pa.list_(pa.int64())),
        "reference": pa.array([t.reference for t in traces], pa.list_(pa.int64())),
        "finished_by_eos": pa.array([t.finished_by_eos for t in traces], pa.bool_()),
        "max_new_tokens": pa.array([t.max_new_tokens for t in traces], pa.int64()),
        "max_draft": pa.array([-1 if t.max_draft is None else t.max_draft for t in traces], pa.int64()),
        "eos_ids": pa.array([t.eos_ids for t in traces], pa.list_(pa.int64())),
        "rollout_tokens": pa.array([[r.tokens for r in t.rollouts] for t in traces], pa.list_(pa.list_(pa.int64()))),
    }
    for name in ("q_tokens", "q_max", "entropy"):
        cols[f"rollout_{name}"] = pa.array([[getattr(r, name) for r in t.rollouts] for t in traces],
                                           pa.list_(pa.list_(pa.float64())))
    for name in ("pair", "tokenizer_hash", "target", "draft", "key"):
        cols[name] = pa.array([getattr(t, name) for t in traces], pa.string())
    for name in ("prefill_time", "ar_wall_time"):
        cols[name] = pa.array([getattr(t, name) for t in traces], pa.float64())
    cols["ar_step_times"] = pa.array([t.ar_step_times for t in traces], pa.list_(pa.float64()))
    cols["meta"] = pa.array([json.dumps(t.meta, sort_keys=True) for t in traces], pa.string())
    return pa.table(cols, metadata={"specsweep.trace_version": str(TRACE_VERSION)})


def table_to_traces(table) -> list[Trace]:
    """The traces stored in ``table`` (the inverse of :func:`traces_to_table`); refuses another trace version."""
    version = (table.schema.metadata or {}).get(b"specsweep.trace_version", b"?").decode()
    if version != str(TRACE_VERSION):
        raise SpecsweepError(f"trace file has version {version}; this specsweep reads version {TRACE_VERSION}")
    out = []
    for row in table.to_pylist():
        rollouts = [Rollout(list(tok), list(q), list(m), list(h)) for tok, q, m, h in
                    zip(row["rollout_tokens"], row["rollout_q_tokens"], row["rollout_q_max"], row["rollout_entropy"])]
        t = Trace(prompt_ids=list(row["prompt_ids"]), reference=list(row["reference"]), eos_ids=list(row["eos_ids"]),
                  max_draft=None if row["max_draft"] < 0 else int(row["max_draft"]), rollouts=rollouts,
                  ar_step_times=list(row["ar_step_times"]), meta=json.loads(row["meta"]),
                  **{k: row[k] for k in _SCALARS})
        t.check()
        out.append(t)
    return out


def write_traces(path: str | Path, traces: Sequence[Trace]) -> Path:
    """Write ``traces`` to one Parquet file (parent folders created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(traces_to_table(traces), path)
    return path


def read_traces(path: str | Path) -> list[Trace]:
    """Every trace in a Parquet file, or in every ``*.parquet`` file of a folder (sorted by name)."""
    path = Path(path)
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    if not files or not all(f.exists() for f in files):
        raise SpecsweepError(f"no trace found at {path}: record traces first (an `ar` run plus rollouts per turn)")
    return [t for f in files for t in _traces_of(f)]


def _traces_of(path: Path) -> list[Trace]:
    """The traces of one Parquet file; one line naming the file when it is cut short, not Parquet or not a trace
    table (``write_traces``'s columns)."""
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0].rsplit("': ", 1)[-1][:100]
        raise SpecsweepError(f"trace file {path} is not a readable Parquet file ({first}): it was cut short or "
                             "overwritten; run the sweep again with --fresh or remove the file") from None
    try:
        return table_to_traces(table)
    except SpecsweepError as e:
        raise SpecsweepError(f"trace file {path}: {e}") from None
    except (KeyError, TypeError, ValueError, IndexError, pa.ArrowException) as e:
        raise SpecsweepError(f"trace file {path} is Parquet but not a trace table ({type(e).__name__}: "
                             f"{str(e)[:80]})") from None
