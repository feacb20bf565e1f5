"""What the oracle bound may be compared with, and what the report says about its scope.

The bound (``actors/tracing/oracle_bound.py``) is the least *predicted* time over every γ schedule of one recorded turn,
under the single-row cost model replay prices chain policies with (``actors/tracing/replay.py``: ``CostClock``). A figure
set against it is meaningful only for rows priced on that same surface in that same mode, so one rule serves
both ``fraction_of_oracle`` and ``bound_check`` (:func:`oracle_scope`, :func:`comparable_to_bound`):

- **same mode**: replayed rows only. A live row is a measured time; the bound is a prediction, and a live time
  set against it mixes the cost model's error into the fraction — in ``mode: both`` the live rows are left out
  and the report says so;
- **same cost surface**: batch size 1 and a chain policy. A batch policy (``tetris``, ``gt-batch``,
  ``batch-schedule``) is replayed as a batch even at B = 1, priced on the batch surface (``BatchCostClock``: no
  catch-up or context terms), so it is left out, and the report says so;
- where a pair has no bound, the live ``oracle`` policy is the reference, against rows of its own mode.

Two limits are stated in the report rather than left silent (:func:`scope_notes`):

- ``rollout_length`` R below a cap a policy asked for: the trace holds R proposals per position, so the bound is
  the least time over schedules of at most R drafts a step — it does not bound a policy drafting more;
- B > 1: there is no bound. A per-batch bound would minimise over every per-step cap vector (Π_b (K_b + 1)
  choices a step, the rows' positions, contexts and draft-cache lags coupled through the shared forward): the
  dynamic program's state grows exponentially with B, so it is not computed and B > 1 configs have no fraction.
"""
from __future__ import annotations

import pandas as pd

from policies.base import BatchPolicy
from policies.oracle import BOUND_NAME
from policies.registry import REGISTRY

BATCH_POLICIES = tuple(n for n, (cls, *_) in REGISTRY.items() if issubclass(cls, BatchPolicy))
LIVE_ORACLE = "oracle"


def _modes(df: pd.DataFrame) -> pd.Series:
    """Each row's mode; a log written before replay existed is live."""
    return df["mode"].fillna("live") if "mode" in df else pd.Series("live", index=df.index)


def comparable_to_bound(df: pd.DataFrame) -> pd.Series:
    """Rows priced like the bound (module docstring): replayed, batch size 1, a chain policy (the bound's own rows
    included)."""
    keep = (_modes(df) == "replay") & ~df["policy"].isin(BATCH_POLICIES)
    if "batch_size" in df:
        keep &= df["batch_size"].fillna(1).astype(int) == 1
    return keep


def oracle_scope(df: pd.DataFrame) -> pd.DataFrame:
    """Per pair, the rows a fraction of oracle may use: those comparable to the bound where the pair has one, else
    those in the live ``oracle`` policy's mode(s) (module docstring)."""
    if not len(df):
        return df
    parts = []
    for _, part in df.groupby("pair", sort=False):
        if (part["policy"] == BOUND_NAME).any():
            parts.append(part[comparable_to_bound(part)])
        elif (part["policy"] == LIVE_ORACLE).any():
            modes = _modes(part)
            parts.append(part[modes.isin(set(modes[part["policy"] == LIVE_ORACLE]))])
        else:
            parts.append(part)
    return pd.concat(parts) if parts else df.iloc[0:0]


def bound_check(df: pd.DataFrame) -> dict:
    """Is the oracle bound below every comparable config on every turn? Over the turns (pair, question, turn,
    repeat) with an ``oracle-bound`` row: ``turns``, ``violations`` (turns where some comparable config's predicted
    wall time is below the bound's by more than 1e-9 relative) and ``worst`` (the largest such excess)."""
    if "mode" not in df or not (df["policy"] == BOUND_NAME).any():
        return {"turns": 0, "violations": 0, "worst": 0.0}
    rep = df[(df["status"] == "ok") & comparable_to_bound(df)]
    keys = ["pair", "question_id", "turn", "repeat"]
    bound = rep[rep["policy"] == BOUND_NAME].set_index(keys)["wall_time"].astype(float)
    others = rep[rep["policy"] != BOUND_NAME].groupby(keys)["wall_time"].min().astype(float)
    both = pd.concat([bound.rename("bound"), others.rename("best")], axis=1, join="inner")
    excess = (both["bound"] - both["best"]) / both["best"]
    bad = excess > 1e-9
    return {"turns": len(both), "violations": int(bad.sum()), "worst": float(excess[bad].max()) if bad.any() else 0.0}


def scope_notes(df: pd.DataFrame, rollout_length: int | None = None) -> list[str]:
    """One line per limit of the bound's comparisons that applies to this log (module docstring)."""
    ok = df[df["status"] == "ok"] if "status" in df else df
    notes = []
    has_bound = (ok["policy"] == BOUND_NAME).any()
    if has_bound:
        modes = _modes(ok)
        live = ok[(modes == "live") & ~ok["policy"].isin(("ar", BOUND_NAME))]
        if len(live):
            notes.append(f"{live['config_key'].nunique() if 'config_key' in live else len(live)} live config(s) are "
                         "not set against the oracle bound (a replay prediction): fraction of oracle and the bound "
                         "check use replayed rows only")
        batch = ok[ok["policy"].isin(BATCH_POLICIES) & (modes == "replay")]
        if "batch_size" in batch:
            batch = batch[batch["batch_size"].fillna(1).astype(int) == 1]
        if len(batch):
            notes.append(f"batch policies at B = 1 ({', '.join(sorted(set(batch['policy'])))}) are priced on the "
                         "batch cost surface, not the bound's: left out of fraction of oracle and the bound check")
        if rollout_length is not None and "k_max" in ok:
            caps = ok[~ok["policy"].isin(("ar", BOUND_NAME))].assign(
                cap=lambda f: f["k_max"].map(lambda k: max(k) if k is not None and len(k) else 0))
            over = caps[caps["cap"] > rollout_length]
            if len(over):
                worst = over.loc[over["cap"].idxmax()]
                notes.append(f"rollout_length {rollout_length} is below the cap {len(set(over['policy_spec']))} "
                             f"config(s) asked for (up to {int(worst['cap'])}, {worst['policy_spec']}): the bound is "
                             f"the least time over schedules of at most {rollout_length} drafts a step, truncated "
                             "for them")
    if "batch_size" in ok and (ok["batch_size"].fillna(1).astype(int) > 1).any():
        notes.append("no oracle bound at B > 1: a per-batch bound minimises over every per-step cap vector "
                     "(Π_b (K_b + 1) choices a step, the rows' contexts and draft-cache lags coupled), exponential "
                     "in B; not computed, so B > 1 configs have no fraction of oracle")
    return notes


def bound_text(check: dict, frac: pd.DataFrame, notes: list[str] = ()) -> str:
    """Whether the bound held on every turn, the most efficient config against it, then the scope notes ("" without
    a bound and without notes)."""
    if not check["turns"]:
        return "\n".join(notes)
    n = check["turns"]
    on = "its one turn" if n == 1 else "both turns" if n == 2 else f"all {n} turns"
    held = (f"oracle bound ≤ every comparable replayed config on {on}" if not check["violations"]
            else f"WARNING: oracle bound above a replayed config on {check['violations']} of {check['turns']} turns "
            f"(by up to {check['worst']:.2%}): a bug, please report it")
    f = frac.dropna(subset=["fraction_of_oracle"]) if len(frac) else frac
    if len(f):
        f = f[~f["policy_spec"].str.startswith("oracle")]      # the oracle policy knows the answer: not a policy
    if len(f):
        b = f.loc[f["fraction_of_oracle"].idxmax()]
        held += (f"; most efficient policy: {b['policy_spec']} γ={int(b['gamma'])} at {b['fraction_of_oracle']:.1%} of the "
                 f"bound's speed [{b['fraction_of_oracle_lo']:.1%}, {b['fraction_of_oracle_hi']:.1%}]")
    return "\n".join([held, *notes])
