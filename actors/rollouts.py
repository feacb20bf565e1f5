"""Traces for exact greedy replay: the target's greedy output plus the draft's rollouts along it.

A :class:`Trace` holds, for one prompt,

* the reference y_1 … y_N: the target-only greedy output (what ``ar`` emits), and
  whether it ended with an EOS;
* for every position j = 0 … N − 1 (state = prompt + y_<j) the *rollout*: the draft's
  own greedy continuation x_1 … x_m from that state, with, for each proposal, what a
  policy may read — q(x_i), max q and H(q) in nats — computed by the live drafter's
  own :func:`actors.drafters.pick_draft_token`.

A rollout stops after L proposals (``max_draft``; None = the whole remaining budget),
after ``max_new_tokens − j − 1`` proposals (the engine never drafts past the budget),
or right after an EOS proposal (the live drafter stops there too), whichever comes first.

How rollouts are computed (``method="incremental"``, the only method): exactly the way
the live :class:`~actors.drafters.ModelDrafter` computes proposals — the draft's own
runner, the prompt fed in one forward, then one token per forward on its KV cache — so
every proposal is produced by the same kernels on the same cache contents as a live
step that feeds one token at a time. Rollouts are shared along the reference: when the
first proposal at j equals y_j, the cache state "prompt + y_<j + x_1" *is* the state
"prompt + y_≤j", so the rollout at j + 1 is the rollout at j without its first token
(bit for bit — the same single-token forwards on the same cache) plus one new
proposal. Only positions whose first proposal is wrong start a fresh rollout. The cost
is about N + (1 − p₁)·N·L single-token draft forwards (p₁ = first-proposal acceptance),
instead of N·L.

Exactness caveat (floating point): a live step that follows a fully accepted draft
feeds the draft *two* tokens in one forward (the last draft token and the bonus),
and a step after a zero-draft step feeds several; a trace always feeds one. In exact
arithmetic the logits are identical; in floating point they may differ in the last
bits, so q values can differ by ulps and an argmax could flip on an exact near-tie.
The tests check replay against live step for step on tiny models; ``Trace.meta``
records the method so a mismatch can be traced.

EAGLE heads (``method="eagle"``): a head's proposals from a committed prefix depend on that
prefix and the target's features along it only (``actors/eagle_drafter.py``: every catch-up
re-feeds the accepted positions with the target's own features). The target's features over
prompt + reference come from one forward; the rollout at j is the live drafter's own chain at one row
(``actors/drafters.py::propose_chain``) from prompt + y_<j, asked for more until the cap or an EOS. The same
floating-point caveat applies (live features come from verify forwards of k + 1 tokens).
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from actors.drafters import ModelDrafter, pick_draft_token, propose_chain
from policies.base import MORE
from policies.errors import SpecsweepError
from policies.fixed import TargetOnly

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


@torch.no_grad()
def compute_rollouts(drafter, prompt_ids: Sequence[int], reference: Sequence[int], *, max_new_tokens: int,
                     max_draft: int | None, eos_ids: Iterable[int] = ()) -> tuple[list[Rollout], dict]:
    """Rollouts at every reference position, computed incrementally on the drafter's own runner.

    ``drafter``: a :class:`~actors.drafters.ModelDrafter` (its runner is reset and used
    here; the engine resets it again at its next generation). Returns the rollouts and
    counters (draft forwards run, fresh rollouts started).
    """
    if drafter.needs_features:
        raise SpecsweepError("an EAGLE head's rollouts need the target's features: use record_trace")
    if not isinstance(drafter, ModelDrafter):
        raise SpecsweepError("rollouts need a draft model (the n-gram drafter is not traced yet)")
    eos = frozenset(int(t) for t in eos_ids)
    runner = drafter.runner
    P, N = len(prompt_ids), len(reference)
    ref = [int(t) for t in reference]

    def cap(j: int) -> int:
        left = max_new_tokens - j - 1
        return left if max_draft is None else min(max_draft, left)

    def done(r: Rollout, j: int) -> bool:
        return len(r) >= cap(j) or (len(r) > 0 and r.tokens[-1] in eos)

    forwards = fresh = 0
    runner.reset()

    def step(ids: list[int]) -> tuple:
        nonlocal forwards
        forwards += 1
        return pick_draft_token(runner.forward(ids, last_only=True)[-1], None, None)[:4]

    # Invariant while at position j: the cache holds prompt + y_<j + cur.tokens[:fed], and
    # cur.tokens[fed] is the draft's pick after exactly that (so len(cur) == fed + 1).
    cur = Rollout()
    cur.add(*step(list(prompt_ids)))
    fed = 0
    out: list[Rollout] = []
    for j in range(N):
        c = cap(j)
        while not done(cur, j):                          # extend to the cap or an EOS proposal
            cur.add(*step([cur.tokens[fed]]))
            fed += 1
        out.append(cur if len(cur) <= max(c, 0) else
                   Rollout(cur.tokens[:max(c, 0)], cur.q_tokens[:max(c, 0)], cur.q_max[:max(c, 0)],
                           cur.entropy[:max(c, 0)]))
        if j == N - 1:
            break
        if cur.tokens[0] == ref[j] and fed >= 1:         # prompt + y_<j + x_1 is prompt + y_<=j: share
            cur, fed = cur.tail(), fed - 1
        else:                                            # start afresh from prompt + y_<=j
            runner.rollback(P + j)
            fresh += cur.tokens[0] != ref[j]
            cur, fed = Rollout(), 0
            cur.add(*step([ref[j]]))
    return out, {"method": "incremental", "draft_forwards": forwards, "fresh_rollouts": fresh}


@torch.no_grad()
def eagle_rollouts(drafter, target, prompt_ids: Sequence[int], reference: Sequence[int], *, max_new_tokens: int,
                   max_draft: int | None, eos_ids: Iterable[int] = ()) -> tuple[list[Rollout], dict]:
    """Rollouts of an :class:`~actors.eagle_drafter.EagleDrafter` at every reference position (module docstring)."""
    seq = [int(t) for t in prompt_ids] + [int(t) for t in reference]
    P, N = len(prompt_ids), len(reference)
    drafter.reset(1, None, None, frozenset(int(t) for t in eos_ids))
    if len(seq) > 2:
        hidden = target(input_ids=torch.tensor([seq[:-2]], device=target.device),
                        output_hidden_states=True).hidden_states[-1][0]
        drafter.see_features(0, 0, hidden)       # f_0 … f_{P+N−3}: every prefix the rollouts start from
    out, forwards = [], 0
    for j in range(N):
        left = max_new_tokens - j - 1
        cap = left if max_draft is None else min(max_draft, left)
        r = Rollout()
        if cap > 0:
            prop = propose_chain(drafter, seq[:P + j], cap, lambda *a: MORE)
            forwards += prop.proposed
            for x, q, m, h in zip(prop.tokens, prop.q_tokens, prop.q_max, prop.entropy):
                r.add(x, q, m, h)
        out.append(r)
    return out, {"method": "eagle", "draft_forwards": forwards, "fresh_rollouts": N}


@torch.no_grad()
def record_trace(engine, prompt_ids: Sequence[int], *, max_new_tokens: int, max_draft: int | None = None,
                 pair: str = "", tokenizer_hash: str = "", target: str = "", draft: str = "",
                 key: str = "", ar=None) -> Trace:
    """Run the target alone (the ``ar`` generation, timed) and compute the draft's rollouts along its output.

    ``engine``: a :class:`~actors.engine.SpecEngine` with a model drafter. The reference
    is exactly what ``ar`` emits under the same ``max_new_tokens`` and EOS set.
    ``ar``: that generation when the caller already ran it (then it is not run again).
    """

    if max_draft is not None and max_draft < 1:
        raise SpecsweepError(f"max_draft must be >= 1 or None (the whole budget), got {max_draft}")
    if ar is None:
        ar = engine.generate(list(prompt_ids), TargetOnly(), max_new_tokens=max_new_tokens)
    t0 = time.perf_counter()
    if engine.drafter is not None and engine.drafter.needs_features:
        rollouts, info = eagle_rollouts(engine.drafter, engine.target, prompt_ids, ar.token_ids,
                                        max_new_tokens=max_new_tokens, max_draft=max_draft, eos_ids=engine.eos)
    else:
        rollouts, info = compute_rollouts(engine.drafter, prompt_ids, ar.token_ids, max_new_tokens=max_new_tokens,
                                          max_draft=max_draft, eos_ids=engine.eos)
    info["rollout_seconds"] = time.perf_counter() - t0
    info["version"] = TRACE_VERSION
    return Trace(prompt_ids=[int(t) for t in prompt_ids], reference=list(ar.token_ids),
                 finished_by_eos=ar.finished_by_eos, max_new_tokens=int(max_new_tokens), max_draft=max_draft,
                 eos_ids=sorted(engine.eos), rollouts=rollouts, pair=pair, tokenizer_hash=tokenizer_hash,
                 target=target, draft=draft, prefill_time=ar.prefill_time,
                 ar_step_times=[s.draft_time + s.verify_time for s in ar.steps], ar_wall_time=ar.wall_time,
                 key=key, meta=info)


def record_pair_trace(pair, prompt_ids: Sequence[int], *, max_new_tokens: int, max_draft: int | None = None,
                      key: str = "", ar=None) -> Trace:
    """:func:`record_trace` on a loaded :class:`~actors.pair.Pair`, fingerprinted by label, tokenizer and models."""
    return record_trace(pair.engine, prompt_ids, max_new_tokens=max_new_tokens, max_draft=max_draft,
                        pair=(pair.cfg.name or pair.cfg.target), tokenizer_hash=tokenizer_fingerprint(pair.tokenizer),
                        target=pair.cfg.target, draft=str(pair.cfg.draft), key=key, ar=ar)


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
