"""``actors/costs/batch_costs.py``: the batch cost surface is measured by the one timing harness (``actors/costs/probe.py``,
the engine's own steps at B rows, as ``calibrate`` times one row), has CostModel.batch's shape and non-negative times,
and a cost model holding it reads them back at the measured points (no timing assertions: machines are noisy);
``bench/batch.py``'s figures on the same tiny pair."""
import json

import pytest

from actors.core.engine import SpecEngine
from actors.costs.batch_costs import measure_batch_costs, positive_times
from actors.costs.probe import probe_runs, row_lengths
from actors.drafting.drafters import ModelDrafter, NgramDrafter
from actors.loading.tiny_pair import gpt2, llama, perturbed, sharpen
from bench.batch import gt_costs, ratio_interval, run_batches, stops_paying
from policies.costs import CostModel

SIZES, WIDTHS = (3, 1), (1, 4, 2)
KEYS = {"knots", "values", "raw", "draft", "draft_base", "overhead", "steps"}


def tiny_engine(**kw):
    target = sharpen(llama(vocab=40, seed=3))
    return SpecEngine(target, ModelDrafter(perturbed(target, 0.2, seed=4)), eos_token_ids=[0], **kw)


@pytest.fixture(scope="module")
def surface():
    """The surface of a tiny Llama pair at B ∈ {1, 3} and L ∈ {1, 2, 4}, context 12, 2 repeats."""
    return measure_batch_costs(tiny_engine(), sizes=SIZES, widths=WIDTHS, context=12, repeats=2)


def test_the_harness_runs_every_row_of_a_batch_through_the_engines_steps():
    engine = tiny_engine()
    runs, probe = probe_runs(engine, context=10, repeats=2, steps=2, rows=3, lengths=[0, 3], second_context=False)
    assert probe["rows"] == 3 and probe["lengths"] == [0, 3] and probe["contexts"] == [10]
    assert row_lengths(10, 3) == [8, 10, 12] and row_lengths(100, 5) == [75, 88, 100, 112, 125]   # ± 25 %, mean kept
    assert row_lengths(10, 1) == [10]                                                          # one row: the context
    # per length: a repeated-block and a random batch, 2 kept steps each; row 0's record of each batch
    assert [[s.drafted for s in g.steps] for _, g in runs] == [[0, 0], [0, 0], [3, 3], [3, 3]]
    for _, g in runs:
        for s in g.steps:                        # the whole batch's forward and draft phase, timed apart
            assert s.batch_rows == 3 and 0 < s.forward_time <= s.verify_time
            assert s.draft_time > 0 if s.drafted else s.draft_time < s.forward_time
    assert engine.eos == frozenset({0})          # EOS ignored only while probing
    with pytest.raises(ValueError, match="rows must be >= 1"):
        probe_runs(engine, rows=0)


def test_shape_and_times(surface):
    assert sorted(surface) == [1, 3]
    for entry in surface.values():
        assert set(entry) == KEYS
        assert entry["values"] == sorted(entry["values"])        # the monotone fit of the raw values
        assert sum(entry["values"]) == pytest.approx(sum(entry["raw"]))   # pooling keeps the total
        assert entry["knots"] == [1, 2, 4] and len(entry["values"]) == 3
        assert all(v > 0 for v in entry["values"])
        # the tiny draft's level costs microseconds: under load its fit may come out 0 ("costs nothing measurable",
        # the module's rule), never below
        assert entry["draft"] >= 0 and entry["draft_base"] >= 0 and entry["overhead"] >= 0
        assert entry["steps"] == 3 * 2 * 2


def test_a_cost_model_reads_the_surface_back(surface):
    base = gt_costs(surface, context=12)
    model = CostModel.from_dict(json.loads(json.dumps(base.to_dict())))      # and it survives storage
    e = surface[3]
    for L, t in zip(e["knots"], e["values"]):
        assert model.batch_verify(3, L) == pytest.approx(t, rel=1e-12)
    assert model.batch_draft(3, 2) == pytest.approx(e["draft_base"] + 2 * e["draft"], rel=1e-12)
    assert model.batch_draft(3, 0) == 0.0 and model.batch_overhead(3) == pytest.approx(e["overhead"], rel=1e-12)
    assert model.batch_step_time(3, 3) == pytest.approx(e["draft_base"] + 3 * e["draft"]
                                                        + model.batch_verify(3, 4) + e["overhead"], rel=1e-12)
    one = surface[1]                    # B = 1: the single-row model, built from the B = 1 entry
    assert model.verify(2) == pytest.approx(one["values"][1]) and model.overhead == one["overhead"]
    assert model.batch_draft(1, 2) == pytest.approx(one["draft_base"] + 2 * one["draft"])
    assert model.batch_step_time(1, 1) == pytest.approx(model.step_time(1))


def test_a_width_no_step_ran_at_is_read_off_the_fit_never_zero():
    """Runs that verified 1 and 2 tokens only, a surface asked for widths 1, 2, 3: width 3 comes from the fitted
    table (extrapolated), so neither the clock's raw value nor the policies' table holds a 0."""
    from actors.costs.batch_costs import surface_entry

    engine = tiny_engine()
    runs, _ = probe_runs(engine, context=10, repeats=2, steps=2, rows=2, lengths=[0, 1], second_context=False)
    e = surface_entry(runs, [1, 2, 3])
    assert all(v > 0 for v in e["raw"]) and all(v > 0 for v in e["values"])
    model = CostModel.measured(0.01, {1: 0.1})
    model.batch = {2: e}
    assert model.as_measured().batch_verify(2, 3) > 0


def test_a_surface_stored_before_it_had_phases_still_reads():
    """A surface without ``draft_base``/``overhead`` (measured before the one harness): the single-row overhead."""
    model = CostModel.measured(0.01, {1: 0.1, 2: 0.12})
    model.overhead = 0.005
    model.batch = {4: {"knots": [1, 2], "values": [0.2, 0.3], "draft": 0.02}}
    assert model.batch_draft(4, 3) == pytest.approx(0.06) and model.batch_overhead(4) == 0.005
    assert model.batch_step_time(4, 1) == pytest.approx(0.02 + 0.3 + 0.005)


def test_without_a_drafter_only_ar_steps_run_and_other_families_work():
    target = gpt2(vocab=30, layers=1, hidden=16, seed=5)        # learned positions
    out = measure_batch_costs(SpecEngine(target), sizes=(2,), widths=(3,), context=5, repeats=1)
    assert list(out) == [2] and out[2]["knots"] == [1] and out[2]["draft"] == 0.0 and out[2]["values"][0] > 0


def test_a_lookup_drafter_is_priced_by_what_its_steps_cost():
    target = llama(vocab=30, layers=1, hidden=16, seed=5)
    out = measure_batch_costs(SpecEngine(target, NgramDrafter()), sizes=(2,), widths=(1, 3), context=16, repeats=1)
    assert out[2]["knots"] == [1, 3] and out[2]["draft"] >= 0 and all(v > 0 for v in out[2]["values"])


def test_an_eagle_head_prices_a_batched_head_level():
    from actors.drafting.eagle_drafter import EagleDrafter
    from actors.drafting.eagle_head import init_head

    target = llama(vocab=40, layers=2, hidden=32, seed=3)
    out = measure_batch_costs(SpecEngine(target, EagleDrafter(init_head(target, seed=1), target)), sizes=(1, 3),
                              widths=(1, 2), context=6, repeats=1)
    assert sorted(out) == [1, 3] and all(out[b]["draft"] > 0 for b in out)


@pytest.mark.parametrize("kw", [{"sizes": (0, 2)}, {"widths": ()}, {"context": 0}, {"repeats": 0}, {"steps": 0}])
def test_bad_settings_are_refused(kw):
    with pytest.raises(ValueError):
        measure_batch_costs(SpecEngine(llama(vocab=20, layers=1, hidden=16)), **{"sizes": (1,), "widths": (1,), **kw})


def test_bench_batch_figures_on_the_tiny_pair(surface):
    """bench/batch.py's pieces at tiny size: batches in order, each batch's time split over its rows exactly,
    paired ratios, gt-batch priced by the measured surface, and the closing sentence."""
    target = sharpen(llama(vocab=40, seed=3))
    costs = gt_costs(surface, context=12)
    assert costs.batch_verify(3, 2) == surface[3]["values"][1] and costs.verify(1) == surface[1]["values"][0]
    engine = SpecEngine(target, ModelDrafter(perturbed(target, 0.2, seed=4)), costs=costs)
    prompts = [[5, 6, 7], [8, 9], [10, 11, 12, 13, 14]]
    runs = {}
    run_batches(engine, prompts, 2, [("ar", 1), ("fixed", 2), ("gt-batch", 1)], 6, runs)
    ar = runs[("ar", 1)]
    assert len(ar.batch_walls) == 2 and [g.new_tokens for g in ar.gens] == [6, 6, 6]
    assert sum(ar.seconds) == pytest.approx(sum(ar.batch_walls)) and ar.throughput > 0
    assert sum(ar.decode_seconds) == pytest.approx(sum(ar.batch_walls) - sum(ar.prefills))
    assert 0 < sum(ar.prefills) < sum(ar.batch_walls) and ar.decode_throughput > ar.throughput
    assert ratio_interval(ar, ar, decode_only=True) == pytest.approx((1.0, 1.0, 1.0))
    for config in (("fixed", 2), ("gt-batch", 1)):
        assert [g.token_ids for g in runs[config].gens] == [g.token_ids for g in ar.gens]
    assert ratio_interval(ar, ar) == pytest.approx((1.0, 1.0, 1.0))
    best = {1: (("fixed", 2), (1.3, 1.1, 1.5)), 4: (("tetris", 4), (1.1, 0.9, 1.3)), 16: (("ar", 1), (0.8, 0.7, 0.9))}
    assert stops_paying(best) == "speculation stops paying at B = 16 (best policy there ≤ ar; it paid at B = 4)"
    assert stops_paying({1: best[1]}).startswith("speculation pays at every")
    assert stops_paying({16: best[16]}).startswith("speculation does not pay")
    assert stops_paying({1: best[16], 4: best[1], 16: best[16]}) == \
        "speculation pays at B = 4 and not at B = 1, 16 (best policy ≤ ar there)"


def test_the_surface_is_measured_on_the_engines_own_rows_runner():
    """A static pair's batches run on the per-row static cache, so its surface is timed there too."""
    from actors.runtime.static_batch_runner import StaticBatchRunner

    engine = SpecEngine(llama(vocab=20, layers=1, hidden=16), engine="static", capacity=64)
    out = measure_batch_costs(engine, sizes=(2,), widths=(1,), context=6, repeats=1)
    assert isinstance(engine.runners._batch, StaticBatchRunner)       # made by the measurement's batches
    assert all(v > 0 for v in out[2]["raw"])


def test_a_surface_entry_never_stores_a_negative_draft_part():
    """Draft phases of −1 ms + 4 ms·k (a negative per-step part, as a noisy batch can fit): d₀ is dropped and d₁
    refitted alone (least squares through the origin), not d₀ clipped to 0 with d₁ left as fitted."""
    from actors.core.step import Generation
    from actors.costs.batch_costs import surface_entry
    from policies.base import Step

    runs = []
    for k in (0, 1, 2, 4):
        steps = [Step(k_max=k, drafted=k, accepted=0, emitted=1, proposed=k, draft_time=(-1e-3 + 4e-3 * k) if k else 0.0,
                      verify_time=0.02 + 1e-3 * k, forward_time=0.02 + 1e-3 * k) for _ in range(4)]
        g = Generation(token_ids=[1] * 4, steps=steps, prefill_time=0.0)
        g.wall_time = sum(s.draft_time + s.forward_time for s in steps)
        runs.append((16, g))
    e = surface_entry(runs, [1, 2, 3, 5])
    assert e["draft_base"] == 0.0
    # refitted through the origin (≈ Σ k·t / Σ k² = 3.67 ms; the first step's prompt catch-up column takes a little),
    # not the unconstrained slope of 4 ms that clipping d₀ alone would have kept
    assert 3.6e-3 < e["draft"] < 3.8e-3


def test_a_forward_fitted_at_or_below_zero_takes_the_least_positive_time():
    assert positive_times([-0.002, 0.0, 0.004, 0.003]) == [0.003, 0.003, 0.004, 0.003]
    assert positive_times([0.001, 0.002]) == [0.001, 0.002]
    assert positive_times([-1.0, 0.0]) == [1e-9, 1e-9]          # nothing resolved: still a time the format accepts

