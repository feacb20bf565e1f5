"""bench/tune_gap.py: per-step regrets against the oracle bound's value table, their classes, and the CLI."""
import dataclasses
import json
import random

import pytest
import torch

from actors.rollouts import Rollout, Trace, read_traces, write_traces
from actors.tracing.oracle_bound import SchedulePolicy, oracle_bound, value_table
from actors.tracing.replay import replay
from bench.tune_gap import CLASSES, DEFAULT_POLICIES, gap, main, step_records
from jobs.tune.cli import split_questions
from policies import build
from policies.costs import CostModel
from policies.registry import parse
from tests.helpers import brute_force

EOS = 9
CHEAP = CostModel(draft={"per_step": 0.002, "per_proposal": 0.004, "per_catchup": 0.003, "per_catchup_token": 0.001,
                         "per_proposal_kctx": 0.0005},
                  table={"knots": [1, 2, 4, 8], "values": [0.05, 0.055, 0.07, 0.1], "per_kctx": 0.01,
                         "per_token_kctx": 0.0}, overhead=0.004)
MODELS = {
    "cheap draft": CHEAP,
    # measured forward times below the fitted table and not monotone (T(4) < T(2)): the clocks read these
    "measured table": dataclasses.replace(CHEAP, raw_verify={2: 0.062, 4: 0.058}),
    "costly draft": CostModel(draft={"per_step": 0.01, "per_proposal": 0.03, "per_catchup": 0.02,
                                     "per_catchup_token": 0.002, "per_proposal_kctx": 0.0},
                              table={"knots": [1, 2, 4, 8], "values": [0.05, 0.09, 0.16, 0.3], "per_kctx": 0.0,
                                     "per_token_kctx": 0.0}, overhead=0.001),
}
POLICIES = [("gt", 1), ("gt:ahead=1", 1), ("fixed", 1), ("fixed", 4)]


def make_trace(seed: int, n: int = 20, eos_at_end: bool = False, match=(0, 1, 2, 3, 20, 20), qid: int | None = None,
               pair: str = "") -> Trace:
    """A hand-made turn over 4 tokens: rollouts to the end of the budget that match the reference for a random
    while (drawn from ``match``), with random q's."""
    rng = random.Random(seed)
    reference = [rng.randrange(4) for _ in range(n)]
    if eos_at_end:
        reference[-1] = EOS
    rollouts = []
    for j in range(n):
        m = rng.choice(match)
        toks = [reference[j + i] if i < m else (reference[j + i] + 1) % 4 for i in range(n - j)]
        if eos_at_end and EOS in toks:
            toks = toks[: toks.index(EOS) + 1]
        q = [round(rng.uniform(0.05, 0.99), 3) for _ in toks]
        rollouts.append(Rollout(toks, q, [max(x, 0.5) for x in q], [1.0] * len(toks)))
    t = Trace(prompt_ids=[1, 2, 3], reference=reference, finished_by_eos=eos_at_end, max_new_tokens=n,
              max_draft=None, eos_ids=[EOS], rollouts=rollouts, prefill_time=0.03, pair=pair,
              key=f"{pair}|q{qid if qid is not None else seed}|t0")
    t.meta = {"question_id": qid if qid is not None else seed, "turn": 0}
    return t


@pytest.fixture(scope="module")
def recorded():
    """Turns recorded with a tiny random-weight Llama pair (no download): two with a close draft, one with a far
    one (``poor``)."""
    from actors.core.engine import SpecEngine                   # here: transformers loads only where this runs
    from actors.drafting.drafters import ModelDrafter
    from actors.loading.tiny_pair import llama, perturbed, sharpen
    from actors.rollouts import record_trace

    threads = torch.get_num_threads()
    torch.set_num_threads(1)                  # tiny matrices: more threads only contend on a shared box
    try:
        target = sharpen(llama(vocab=70, seed=5))
        out = {}
        for name, noise, prompts in (("good", 0.3, ([4, 9, 2, 7, 7, 1, 30, 12], [5, 5, 8, 13, 2])),
                                     ("poor", 3.0, ([4, 9, 2, 7, 7, 1, 30, 12],))):
            engine = SpecEngine(target, ModelDrafter(perturbed(target, noise, seed=6)), costs=CHEAP)
            out[name] = [record_trace(engine, p, max_new_tokens=24, pair="tiny", key=f"{name}{i}")
                         for i, p in enumerate(prompts)]
    finally:
        torch.set_num_threads(threads)
    return out


def _turns(recorded):
    return recorded["good"] + recorded["poor"] + [make_trace(0), make_trace(1, eos_at_end=True),
                                                 make_trace(2, n=12, match=(0, 0, 1, 12))]


def _records(trace, policy, model):
    table = value_table(trace, model)
    best, opts = table.best, table.options
    g = replay(trace, policy, costs=model, cost_model=model)
    return g, step_records(trace, g.steps, model, best, opts), best


# ---------------------------------------------------------------- 1. regrets telescope and are never negative
@pytest.mark.parametrize("model", list(MODELS), ids=list(MODELS))
def test_step_regrets_add_up_to_time_minus_the_bound_and_are_not_negative(recorded, model):
    m = MODELS[model]
    for trace in _turns(recorded):
        bound = oracle_bound(trace, m)
        table = value_table(trace, m)
        best, opts = table.best, table.options
        assert best[0, len(trace.prompt_ids) - 1] == pytest.approx(bound.step_time, rel=1e-12)
        for spec, gamma in POLICIES:
            g = replay(trace, build(parse(spec), gamma), costs=m, cost_model=m)
            recs = step_records(trace, g.steps, m, best, opts)
            assert [(r["k"], r["p"], r["n"]) for r in recs] == [(s.drafted, s.proposed, s.accepted) for s in g.steps]
            assert sum(s.emitted for s in g.steps) == len(trace.reference)
            # each step's time is replay's own (its catch-up read at the lag the records track)
            for r, s in zip(recs, g.steps):
                assert r["time"] == pytest.approx(s.draft_time + s.verify_time + m.overhead, rel=1e-12, abs=1e-15)
            spent = g.wall_time - g.prefill_time
            total = sum(r["regret"] for r in recs)
            assert total == pytest.approx(spent - bound.step_time, rel=1e-9, abs=1e-12), (trace.key, spec, gamma)
            assert min(r["regret"] for r in recs) >= -1e-12, (trace.key, spec, gamma)
            assert sum(r["plain"] + r["draft"] + r["phi"] for r in recs) == pytest.approx(spent, rel=1e-12)


def _completions(trace, prefix, model, options) -> float:
    """The least replayed time (prefill excluded) of every schedule that starts with ``prefix`` and finishes the turn."""
    return min(t for t, _ in brute_force(trace, model, options, prefix)) - trace.prefill_time


def test_the_value_of_each_state_a_policy_reaches_is_the_best_completion_from_there():
    """V(j, ℓ) at the lag the records track equals the best brute-force completion of the policy's steps so far,
    so a step's regret is exactly its excess over the best it could have done from where it stood."""
    trace, m = make_trace(3, n=5, match=(0, 1, 2, 5)), MODELS["cheap draft"]
    options = [(k, p) for k in range(5) for p in (k, k + 1) if p > 0 or k == 0]
    for spec, gamma in (("fixed", 2), ("gt", 1)):
        g, recs, best = _records(trace, build(parse(spec), gamma), m)
        spent = 0.0
        for i, r in enumerate(recs):
            prefix = [(x["k"], x["p"]) for x in recs[:i + 1]]
            spent += r["time"]
            after = sum(x["regret"] for x in recs[:i + 1]) + best[0, len(trace.prompt_ids) - 1] - spent
            assert after == pytest.approx(_completions(trace, prefix, m, options) - spent, abs=1e-12), (spec, i)


# ---------------------------------------------------------------- 2. the bound itself, and the oracle policy
@pytest.mark.parametrize("model", list(MODELS), ids=list(MODELS))
def test_the_bound_has_no_regret_and_the_oracle_neither_rejects_nor_stops_short(recorded, model):
    m = MODELS[model]
    for trace in _turns(recorded):
        bound = oracle_bound(trace, m)
        g, recs, _ = _records(trace, SchedulePolicy(bound.schedule), m)
        assert [(r["k"], r["p"]) for r in recs] == bound.schedule
        assert sum(r["regret"] for r in recs) == pytest.approx(0.0, abs=1e-12)
        assert all(abs(r["regret"]) <= 1e-12 for r in recs)
        g, recs, _ = _records(trace, build("oracle", 1), m)
        assert {r["cls"] for r in recs} == {"exact"}, trace.key
        assert all(r["k"] == r["n"] == r["n_star"] for r in recs)
        assert sum(r["regret"] for r in recs) >= -1e-12


# ---------------------------------------------------------------- 3. where a far-drafting policy loses its time
def test_drafting_far_on_a_poor_draft_loses_to_rejected_drafts_and_a_short_cap_on_a_perfect_one_stops_short(recorded):
    m = MODELS["cheap draft"]
    (poor,) = recorded["poor"]
    accepted = [next((i for i, (x, y) in enumerate(zip(r.tokens, poor.reference[j:])) if x != y), len(r))
                for j, r in enumerate(poor.rollouts)]
    assert sum(a == 0 for a in accepted) >= 0.6 * len(accepted), accepted   # the far draft is mostly wrong at once
    for trace in (poor, make_trace(5, match=(0, 0, 0, 1))):
        g, recs, _ = _records(trace, build("fixed", 8), m)
        by = {c: sum(r["regret"] for r in recs if r["cls"] == c) for c in CLASSES}
        total = sum(by.values())
        assert total > 0.1 * sum(r["time"] for r in recs)
        assert by["rejected drafts"] >= 0.8 * total, by
        assert sum(r["rejected_drafts"] for r in recs) > sum(r["n"] for r in recs)
    perfect = make_trace(6, match=(20,))                   # every rollout is the reference itself
    g, recs, _ = _records(perfect, build("fixed", 1), m)
    by = {c: sum(r["regret"] for r in recs if r["cls"] == c) for c in CLASSES}
    assert by["rejected drafts"] == 0 and by["stopped short"] >= 0.9 * sum(by.values()) > 0, by


# ---------------------------------------------------------------- 4. the CLI on a tiny sweep output
QIDS = [11, 12, 13, 14]


@pytest.fixture(scope="module")
def output(tmp_path_factory):
    """A sweep output as ``mode: replay`` leaves it: ``traces/*.parquet`` and ``actors.json``, two pairs."""
    folder = tmp_path_factory.mktemp("tgap")
    traces = [make_trace(20 + 5 * i + q, n=14, eos_at_end=q % 2 == 0, qid=q, pair=pair)
              for i, pair in enumerate(("pA", "pB")) for q in QIDS]
    traces.append(dataclasses.replace(make_trace(40, n=6, qid=11, pair="pA"), key="pA|b", meta={"question_id": 11,
                                                                                             "batch_size": 4}))
    write_traces(folder / "traces" / "part-0.parquet", traces)
    models = {"pA": MODELS["cheap draft"], "pB": MODELS["measured table"]}
    (folder / "actors.json").write_text(json.dumps({p: [{"cost_model": c.to_dict(), "costs": c.to_dict()}]
                                                    for p, c in models.items()}))
    return folder


def _table_lines(out: str, pair: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith(f"| {pair} | ")]


def test_cli_prints_one_line_per_pair_and_policy(output, capsys):
    assert main([str(output)]) == 0
    out = capsys.readouterr().out
    for pair in ("pA", "pB"):
        lines = _table_lines(out, pair)
        assert len(lines) == 2 * len(DEFAULT_POLICIES)                      # both tables
        assert [ln.split(" | ")[1] for ln in lines] == list(DEFAULT_POLICIES) * 2
    _, held = split_questions(QIDS, 0)
    assert f"({len(held)} held-out questions; split seed 0;" in out
    assert main([str(output), "--policy", "fixed", "--policy", "gt:ahead=1", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert [ln.split(" | ")[1] for ln in _table_lines(out, "pB")] == ["fixed", "gt:ahead=1"] * 2


def test_gap_rows_decompose_the_time(output):
    rows = gap(str(output), ("gt", "fixed", "oracle"))
    assert [(r["pair"], r["policy"]) for r in rows] == [(p, s) for p in ("pA", "pB") for s in ("gt", "fixed", "oracle")]
    _, held = split_questions(QIDS, 0)
    for r in rows:
        assert r["questions"] == len(held)
        regret = sum(r[c][0] for c in CLASSES)
        assert r["time"][0] == pytest.approx(1.0 + regret, rel=1e-9)          # time = bound + Σ regrets
        assert r["plain"][0] + r["draft"][0] + r["phi"][0] == pytest.approx(r["time"][0], rel=1e-9)
        assert sum(r["bound_parts"].values()) == pytest.approx(1.0, rel=1e-9)
        assert all(r[c][0] >= -1e-12 and r[c][1] <= r[c][2] for c in CLASSES)
        assert sum(r[f"n_{c}"] for c in CLASSES) == r["steps"]
        assert r["below"] + r["equal"] + r["above"] <= r["steps"]
    traces = [t for t in read_traces(output / "traces") if t.meta.get("batch_size", 1) == 1]
    for r in rows:                                           # the time share, recomputed on the held-out turns
        m = MODELS["cheap draft" if r["pair"] == "pA" else "measured table"]
        spent = bound = 0.0
        for t in traces:
            if t.pair == r["pair"] and t.meta["question_id"] in held:
                g = replay(t, build(parse(r["policy"]), 1), costs=m, cost_model=m)
                spent += g.wall_time - g.prefill_time
                bound += oracle_bound(t, m).step_time
        assert r["time"][0] == pytest.approx(spent / bound, rel=1e-9), r["policy"]
    oracle = [r for r in rows if r["policy"] == "oracle"]
    assert all(r["rejected drafts"][0] == r["stopped short"][0] == 0 and r["rejected"] == 0 for r in oracle)
    fixed = [r for r in rows if r["policy"] == "fixed"]                     # γ 1: every draft verified, none discarded
    assert all(r["discarded"] == 0 and r["drafted"] <= r["steps"] for r in fixed)


@pytest.mark.parametrize("case", ["missing", "empty", "no actors.json", "bad actors.json"])
def test_a_bad_output_is_one_line(output, tmp_path, capsys, case):
    folder = tmp_path / "out"
    if case != "missing":
        folder.mkdir()
    if case in ("no actors.json", "bad actors.json"):
        (folder / "traces").symlink_to(output / "traces")
    if case == "bad actors.json":
        (folder / "actors.json").write_text("{not json")
    assert main([str(folder)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and err.startswith("bench.tune_gap: ") and "Traceback" not in err, err
    assert captured.out == ""
    assert ("actors.json" in err) if "actors" in case else ("no batch-size-1 traces" in err)
