"""The Arrow schema of one result row: question × turn × config × repeat.

Every task returns a ``pyarrow.Table`` with exactly these columns; the Parquet log,
MLflow summaries and reports all read them. A failed task becomes rows with
``status = "failed"`` and the reason in ``error``. Times are seconds; token counts are
tokens. The per-step lists (``accept_lengths``, ``drafted``, ``accepted``, ``k_max``, ``proposed``, ``draft_times``,
``verify_times``) hold one entry per target forward after prefill, from the generation's
:class:`~policies.base.Step` records.

Stable names (other code and users rely on them): ``config_key, pair, policy,
policy_spec, gamma, repeat, question_id, category, turn, status, error, new_tokens,
wall_time, token_ids, accept_lengths, drafted, accepted``.
"""
from __future__ import annotations

import pyarrow as pa

INT_LIST = pa.list_(pa.int32())
FLOAT_LIST = pa.list_(pa.float64())
SCHEMA = pa.schema([
    ("task_key", pa.string()),        # identity used to resume: pair|question|block
    ("config_key", pa.string()),      # pair|policy_spec|gamma
    ("pair", pa.string()),
    ("target", pa.string()),
    ("draft", pa.string()),
    ("policy", pa.string()),          # registry name (policies/registry.py)
    ("policy_spec", pa.string()),     # name:params as built (defaults filled in)
    ("params", pa.string()),          # JSON
    ("gamma", pa.int32()),            # the config's initial γ (0 for ar); the per-step cap is k_max
    ("ar_timing", pa.string()),       # ar only: "first" (the baseline) or "last" (the noise control); "" otherwise
    ("repeat", pa.int32()),           # 0-based repetition of the same (config, question)
    ("seed", pa.int64()),             # sampling seed (unused when greedy)
    ("temperature", pa.float64()),    # 0 = greedy
    ("question_id", pa.int64()),
    ("category", pa.string()),        # Spec-Bench task category
    ("turn", pa.int32()),             # 0-based turn of a multi-turn question
    ("new_tokens", pa.int32()),       # tokens generated this turn
    ("wall_time", pa.float64()),      # prefill + every step, synchronized clock (replay: predicted)
    ("tstamp", pa.float64()),         # unix time when this turn finished (Spec-Bench answer tstamp)
    ("prefill_time", pa.float64()),   # the prompt's target forward
    ("draft_time", pa.float64()),     # Σ steps' drafting
    ("verify_time", pa.float64()),    # Σ steps' target forward + acceptance
    ("decoding_steps", pa.int32()),   # target forwards after prefill (Spec-Bench's steps)
    ("target_calls", pa.int32()),     # decoding_steps + 1 when there was a prefill
    ("accept_lengths", INT_LIST),     # per step: tokens emitted, the bonus token counted (Spec-Bench's accept length)
    ("drafted", INT_LIST),            # per step: draft tokens verified (trees: the tree's nodes)
    ("accepted", INT_LIST),           # per step: draft tokens accepted (accept length − 1 unless EOS/budget cut it)
    ("k_max", INT_LIST),              # per step: the draft cap the policy chose (trees: the tree's depth)
    ("proposed", INT_LIST),           # per step: draft proposals this row made, a discarded one included (a batch
                                      # step ran as many draft forwards as its rows' most; trees: 0); null in older logs
    ("draft_times", FLOAT_LIST),      # per step: seconds drafting (a batch step's, shared by its rows; replay:
                                      # predicted); Σ = draft_time; null in older logs
    ("verify_times", FLOAT_LIST),     # per step: seconds verifying (as draft_times); Σ = verify_time; null in
                                      # older logs
    ("text", pa.string()),            # decoded new tokens
    ("token_ids", INT_LIST),          # generated ids (token views)
    ("prompt_ids", INT_LIST),         # the rendered prompt of this turn
    ("status", pa.string()),
    ("error", pa.string()),
    ("device", pa.string()),
    ("actor", pa.string()),
    ("versions", pa.string()),        # JSON: torch, transformers, specsweep
    ("engine", pa.string()),          # eager | static | compiled (actors/runtime/runners.py)
    ("peak_gpu_bytes", pa.int64()),   # peak GPU memory allocated by the actor so far, all its GPUs (0 on CPU)
    ("mode", pa.string()),            # "live" (generated and timed) or "replay" (from the ar run's trace; wall_time
                                      # predicted by the actor's cost model); null in logs written before replay
    ("template", pa.string()),        # the prompt template the turn was rendered with (actors/loading/templates.py); null in
                                      # logs written before it was recorded and in `specsweep replay` rows
    ("time_reliable", pa.bool_()),    # false: wall_time predicted by a cost model whose measurement was not trusted
                                      # (actors/costs/calibrate.py); true for live rows and trusted replays; null in older logs
    ("batch_size", pa.int32()),       # rows decoded together (1 = alone); rows of B > 1 have pair = "label@B{B}"
    ("pad_slots", pa.int32()),        # Σ steps: padding slots this row carried in a padded batch forward (width − 1 −
                                      # its verified drafts; Generation.pad_slots); 0 alone; null in older logs
])


def batch_label(pair: str, batch: int) -> str:
    """The ``pair`` column of a row decoded at batch size ``batch``: the pair's label, ``label@B{batch}`` above 1 — so
    every per-pair figure (speedup vs ``ar``, noise floor, Table 2, MLflow runs) is per pair and batch size."""
    return pair if batch == 1 else f"{pair}@B{batch}"


def config_key(pair: str, policy_spec: str, gamma: int) -> str:
    """The ``config_key`` column: ``pair|policy_spec|gamma``."""
    return f"{pair}|{policy_spec}|{gamma}"


def to_table(rows: list[dict]) -> pa.Table:
    """``rows`` as a ``pyarrow.Table`` in :data:`SCHEMA` (a missing column is null)."""
    cols = {f.name: [r.get(f.name) for r in rows] for f in SCHEMA}
    return pa.Table.from_pydict(cols, schema=SCHEMA)


def upgrade(table: pa.Table) -> pa.Table:
    """A table written by an earlier version, in today's columns (``gammas`` → ``k_max``; ``batch_size`` 1)."""
    names = table.column_names
    if "gammas" in names and "k_max" not in names:
        table = table.rename_columns(["k_max" if n == "gammas" else n for n in names])
    if "batch_size" not in names:              # written before batches: every row decoded alone
        table = table.append_column("batch_size", pa.array([1] * table.num_rows, pa.int32()))
    return table
