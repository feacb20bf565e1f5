"""Replay from a trace must reproduce the live engine step for step (greedy), round-trip through Parquet,
and refuse what it cannot reproduce with one line."""
import json

import pytest

from policies.cost_fit import fit_cost_model, predict_wall
from actors.drafting.drafters import ModelDrafter
from actors.core.engine import SpecEngine
from actors.core.step import Generation
from actors.tracing.replay import replay
from actors.rollouts import read_traces, record_trace, write_traces
from policies.base import SequencePolicy, Step
from policies.costs import CostModel
from policies.errors import SpecsweepError
from policies.fixed import TargetOnly
from policies.registry import REGISTRY, build
from actors.loading.tiny_pair import gpt2, llama, perturbed, sharpen

COSTS = CostModel.measured(t_draft=0.002, t_verify={1: 0.02, 2: 0.021, 4: 0.022, 8: 0.025, 16: 0.03, 32: 0.05})
SEQUENCE = [n for n, (cls, _, _) in REGISTRY.items() if n != "ar" and issubclass(cls, SequencePolicy)]
GAMMA_FREE = {"gt", "oracle", "svip", "adaedl", "dv-threshold", "bandit"}     # initial γ ignored: one γ is enough
PROMPT = [4, 9, 2, 7, 7, 1, 30, 12]
MAX_NEW = 24


def _steps(g: Generation):
    return [(s.k_max, s.drafted, s.accepted, s.emitted) for s in g.steps]


def _same(live: Generation, rep: Generation, label):
    assert rep.token_ids == live.token_ids, label
    assert _steps(rep) == _steps(live), label
    assert rep.finished_by_eos == live.finished_by_eos, label


def _pair(arch):
    if arch is gpt2:   # a random GPT-2 mostly repeats its last token; a noisy draft still misses often
        target = gpt2(vocab=70, seed=13)
        return target, perturbed(target, 2.0, seed=14)
    target = sharpen(arch(vocab=70, seed=5))
    return target, perturbed(target, 0.3, seed=6)


@pytest.fixture(scope="module", params=[llama, gpt2], ids=["llama", "gpt2"])
def setup(request):
    target, draft = _pair(request.param)
    engine = SpecEngine(target, ModelDrafter(draft), costs=COSTS)
    trace = record_trace(engine, PROMPT, max_new_tokens=MAX_NEW, pair="tiny", tokenizer_hash="h1")
    return engine, trace


def test_sequence_policies_cover_the_registry():
    assert {"fixed", "hf-heuristic", "threshold", "gammatune", "gammatune+", "gt", "oracle", "goodput", "svip",
            "adaedl", "dv-threshold", "bandit", "ema-steps"} <= set(SEQUENCE)
    assert not {"sequoia", "gt-static", "eagle2", "gt-dynamic", "ar"} & set(SEQUENCE)


@pytest.mark.parametrize("name", SEQUENCE)
def test_replay_equals_live_step_for_step(setup, name):
    engine, trace = setup
    for gamma in ((3,) if name in GAMMA_FREE else (1, 3, 8)):
        live = engine.generate(PROMPT, build(name, gamma), max_new_tokens=MAX_NEW)
        rep = replay(trace, build(name, gamma), costs=COSTS)
        _same(live, rep, (name, gamma))


def test_trace_is_not_vacuous(setup):
    """Rollouts must both match and miss the reference, so acceptance is exercised both ways."""
    engine, trace = setup
    assert trace.reference == SpecEngine(engine.target).generate(PROMPT, TargetOnly(), max_new_tokens=MAX_NEW).token_ids
    rep = replay(trace, build("fixed", 4))
    assert any(n > 0 for n in rep.accepted) and any(n < k for n, k in zip(rep.accepted, rep.drafted))


def test_max_new_tokens_inside_a_draft(setup):
    engine, trace = setup
    for limit in (1, 2, 5, 7):
        for gamma in (3, 8):
            live = engine.generate(PROMPT, build("fixed", gamma), max_new_tokens=limit)
            _same(live, replay(trace, build("fixed", gamma), max_new_tokens=limit), (limit, gamma))
            assert all(d <= limit - 1 for d in live.drafted)


def test_eos_inside_a_draft():
    target, draft = _pair(llama)
    free = SpecEngine(target).generate(PROMPT, TargetOnly(), max_new_tokens=MAX_NEW).token_ids
    for cut in (3, 9):
        eos = free[cut]
        engine = SpecEngine(target, ModelDrafter(draft), eos_token_ids=[eos], costs=COSTS)
        trace = record_trace(engine, PROMPT, max_new_tokens=MAX_NEW)
        assert trace.finished_by_eos and trace.reference == free[: free.index(eos) + 1]
        for spec, gamma in (("fixed", 3), ("fixed", 8), ("gt", 1), ("oracle", 1), ("hf-heuristic", 1)):
            live = engine.generate(PROMPT, build(spec, gamma), max_new_tokens=MAX_NEW)
            _same(live, replay(trace, build(spec, gamma), costs=COSTS), (cut, spec, gamma))
        # a finished reference also serves a larger budget
        live = engine.generate(PROMPT, build("fixed", 3), max_new_tokens=MAX_NEW + 10)
        _same(live, replay(trace, build("fixed", 3), max_new_tokens=MAX_NEW + 10), "budget beyond eos")


def test_parquet_round_trip(setup, tmp_path):
    _, trace = setup
    path = write_traces(tmp_path / "traces" / "t.parquet", [trace, trace])
    back = read_traces(path.parent)
    assert back == [trace, trace]
    assert _steps(replay(back[0], build("threshold", 4))) == _steps(replay(trace, build("threshold", 4)))


def test_replay_hands_policies_the_same_costs_object(setup):
    _, trace = setup
    seen = []

    class Spy(SequencePolicy):
        name = "spy"

        def reset(self, ctx):
            super().reset(ctx)
            seen.append(ctx.costs)

        def max_draft(self):
            return 2

    replay(trace, Spy(), costs=COSTS)
    assert seen == [COSTS] and seen[0] is COSTS


def test_refusals(setup, tmp_path):
    _, trace = setup
    cases = [
        (lambda: replay(trace, build("fixed", 3), temperature=0.7), "greedy"),
        (lambda: replay(trace, build("sequoia", 3)), "static trees are not replayed"),
        (lambda: replay(trace, build("eagle2", 3)), "dynamic trees"),
        (lambda: replay(trace, build("bandit:reward=clock", 3), costs=COSTS), "reward=clock"),
        (lambda: replay(trace, build("fixed", 3), pair="other"), "pair"),
        (lambda: replay(trace, build("fixed", 3), tokenizer_hash="h2"), "tokenizer"),
        (lambda: replay(trace, build("fixed", 3), max_new_tokens=MAX_NEW + 1), "longer `ar` run"),
        (lambda: read_traces(tmp_path / "nothing"), "no trace found"),
    ]
    for fn, words in cases:
        with pytest.raises(SpecsweepError) as e:
            fn()
        assert words in str(e.value) and "\n" not in str(e.value)


def test_refuses_a_draft_longer_than_recorded():
    target, draft = _pair(llama)
    engine = SpecEngine(target, ModelDrafter(draft))
    trace = record_trace(engine, PROMPT, max_new_tokens=12, max_draft=2)
    assert all(len(r) <= 2 for r in trace.rollouts)
    _same(engine.generate(PROMPT, build("fixed", 2), max_new_tokens=12), replay(trace, build("fixed", 2)), "L=2")
    with pytest.raises(SpecsweepError, match="record with a larger max_draft"):
        replay(trace, build("fixed", 3))


def _true_verify(m, ctx, v=(5e-3, 3e-3, 1e-3, 2e-3, 3e-4)):
    """v0 + v1·[m ≥ 2] + v2·m + v3·C/1000 + v4·m·C/1000: a cost with the jump from one token to two."""
    return v[0] + v[1] * (m >= 2) + v[2] * m + v[3] * ctx / 1000 + v[4] * m * ctx / 1000


def _synthetic_generation(prompt_len, ks, ns, d=(1e-3, 2e-3, 5e-4, 1e-5, 4e-4)):
    """Steps whose times follow known coefficients exactly (no discards)."""
    gen, ctx, dlen = Generation(token_ids=[], prefill_time=0.01), prompt_len, 0
    from policies.costs import draft_features
    for k, n in zip(ks, ns):
        e = max(ctx - dlen - 1, 0) if k else 0
        if k:
            dlen = min(ctx + k - 1, ctx + n)
        dt = sum(a * b for a, b in zip(d, draft_features(k, e, ctx))) if k else 0.0
        gen.steps.append(Step(k_max=k, drafted=k, accepted=n, emitted=n + 1, q_tokens=[], draft_time=dt,
                                    verify_time=_true_verify(k + 1, ctx), proposed=k))
        ctx += n + 1
    gen.wall_time = gen.prefill_time + sum(s.draft_time + s.verify_time for s in gen.steps)
    return gen


def test_cost_model_recovers_known_coefficients():
    ks = [3, 1, 4, 0, 2, 5, 3, 3, 1, 6, 2, 0, 4, 5, 2, 1] * 3
    ns = [min(k, i % 4) for i, k in enumerate(ks)]
    runs = [(p, _synthetic_generation(p, ks, ns)) for p in (10, 80, 300)]
    model = fit_cost_model(runs, label="synthetic")
    assert model.draft["per_proposal"] == pytest.approx(2e-3, rel=1e-6)
    assert model.draft["per_catchup"] == pytest.approx(5e-4, rel=1e-6)
    assert model.table["knots"] == [1, 2, 3, 4, 5, 6, 7]           # every verified length the fit saw
    assert model.table["per_kctx"] == pytest.approx(2e-3, rel=1e-6)
    assert model.table["per_token_kctx"] == pytest.approx(3e-4, rel=1e-6)
    for m in range(1, 8):                                             # the table holds the jump from 1 to 2
        assert model.verify_time(m, 200) == pytest.approx(_true_verify(m, 200), rel=1e-6)
    assert model.verify_time(12, 200) == pytest.approx(_true_verify(12, 200), rel=1e-6)   # linear beyond
    assert model.residuals["step"]["median_abs_rel"] < 1e-9
    for p, g in runs:
        assert predict_wall(model, p, g) == pytest.approx(g.wall_time, rel=1e-9)
    again = CostModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert again.verify_time(5, 200) == pytest.approx(model.verify_time(5, 200))
    # a cost model stored before the table (a line in m) reads back as the same line
    old = {"draft": {k: model.draft[k] for k in ("per_step", "per_proposal", "per_catchup_token", "per_proposal_kctx")},
           "verify": {"intercept": 5e-3, "per_token": 1e-3, "per_kctx": 2e-3, "per_token_kctx": 3e-4}}
    line = CostModel.from_dict(old)
    for m in (1, 2, 5, 40):
        assert line.verify_time(m, 300) == pytest.approx(5e-3 + 1e-3 * m + 2e-3 * 0.3 + 3e-4 * m * 0.3)


def test_cost_model_drops_a_negative_context_slope():
    """A context range too narrow to identify a slope gives no slope, not a negative one."""
    import random

    rng = random.Random(0)
    runs = []
    for p in (50, 52):                       # two nearly equal prompts: C barely varies
        g = _synthetic_generation(p, [2, 0, 3, 1] * 6, [1, 0, 2, 1] * 6)
        for s in g.steps:                    # noise that, fitted freely, could tilt the slope either way
            s.verify_time *= 1 + 0.05 * rng.uniform(-1, 1)
        runs.append((p, g))
    model = fit_cost_model(runs)
    assert model.table["per_kctx"] >= 0 and model.table["per_token_kctx"] >= 0
    assert model.draft["per_proposal_kctx"] >= 0


def test_replay_wall_time_from_the_cost_model(setup):
    """A replay's predicted wall time equals the model's prediction over the live run's steps."""
    engine, trace = setup
    ks = [3, 1, 4, 0, 2, 5, 3, 3, 1, 6, 2, 0, 4, 5, 2, 1]
    model = fit_cost_model([(p, _synthetic_generation(p, ks, [min(k, 1) for k in ks])) for p in (10, 80, 300)])
    live = engine.generate(PROMPT, build("gammatune", 3), max_new_tokens=MAX_NEW)
    live.prefill_time = trace.prefill_time
    rep = replay(trace, build("gammatune", 3), cost_model=model, calibrate=False)
    assert rep.wall_time == pytest.approx(predict_wall(model, len(PROMPT), live), rel=1e-9)
    assert rep.wall_time > trace.prefill_time


def test_replay_is_calibrated_to_the_turns_own_ar_run(setup):
    """Predicted step times scale by s = Σ measured ar step times / Σ predicted ones: a machine twice as slow
    as the fit (every ar step measured at 2× the prediction) doubles every replayed step."""
    import dataclasses

    from policies.cost_fit import turn_scale

    engine, trace = setup
    ks = [3, 1, 4, 0, 2, 5, 3, 3, 1, 6, 2, 0, 4, 5, 2, 1]
    model = fit_cost_model([(p, _synthetic_generation(p, ks, [min(k, 1) for k in ks])) for p in (10, 80, 300)])
    plen = len(trace.prompt_ids)
    slow = dataclasses.replace(trace, ar_step_times=[2 * model.verify_time(1, plen + j)
                                                     for j in range(len(trace.reference))])
    assert turn_scale(model, plen, slow.ar_step_times) == pytest.approx(2.0, rel=1e-9)
    plain = replay(slow, build("fixed", 3), cost_model=model, calibrate=False)
    scaled = replay(slow, build("fixed", 3), cost_model=model, calibrate=True)
    assert scaled.wall_time - scaled.prefill_time == pytest.approx(2 * (plain.wall_time - plain.prefill_time), rel=1e-9)
    assert [s.verify_time for s in scaled.steps] == pytest.approx([2 * s.verify_time for s in plain.steps])
    assert scaled.accept_lengths == plain.accept_lengths        # timing only; the steps are the trace's
    assert turn_scale(model, plen, []) == 1.0                    # no ar timing recorded: uncalibrated
    assert replay(slow, build("fixed", 3), cost_model=model).wall_time == plain.wall_time    # off by default


def test_refit_bench_recovers_a_cost_model_the_timings_follow(setup, tmp_path):
    """bench.replay_refit on a dump whose every step time follows one known model: each fit finds it, and the
    predicted wall times match the 'measured' ones, calibrated or not."""
    import dataclasses
    import pickle

    from policies.cost_fit import draft_feeds
    from bench import replay_refit

    engine, trace = setup
    plen = len(PROMPT)

    def retime(gen):
        ctx = plen
        for s, e in zip(gen.steps, draft_feeds(plen, gen.steps)):
            p = s.proposed or s.drafted
            s.draft_time = (1e-3 + 2e-3 * p + 5e-4 * (e > 0) + 1e-5 * e + 4e-4 * p * ctx / 1000) if p else 0.0
            s.verify_time = s.forward_time = _true_verify(s.drafted + 1, ctx)     # all of the verify phase is the forward
            ctx += s.emitted
        gen.prefill_time = trace.prefill_time
        gen.wall_time = gen.prefill_time + sum(s.draft_time + s.verify_time for s in gen.steps)
        return gen

    fit = [(plen, retime(engine.generate(PROMPT, build(spec, g), max_new_tokens=MAX_NEW)))
           for spec, g in [("ar", 0), ("fixed", 1), ("fixed", 2), ("fixed", 3), ("fixed", 5), ("fixed", 8)]]
    timed = dataclasses.replace(trace, ar_step_times=[_true_verify(1, plen + j) for j in range(len(trace.reference))])
    live = {(0, spec, g): retime(engine.generate(PROMPT, build(spec, g), max_new_tokens=MAX_NEW))
            for spec in ("fixed", "gammatune", "threshold") for g in (1, 3, 6)}
    dump = {"fit_runs": fit, "traces": [timed], "live": live, "costs": COSTS, "spreads": [0.0]}
    r = replay_refit.evaluate(dump, fit)
    assert max(r["uncalibrated"]) < 1e-6 and max(r["calibrated"]) < 1e-6
    assert all(abs(mean) < 1e-6 for mean, _ in r["components"].values())
    path = tmp_path / "dump.pkl"
    path.write_bytes(pickle.dumps(dump))
    replay_refit.main([str(path)])          # every variant fits and prints
