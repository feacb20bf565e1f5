"""``actors/costs/batch_costs.py``: the measured batch cost surface has CostModel.batch's shape, positive medians, and a
cost model holding it reads those medians back at the measured points (no timing assertions: machines are noisy);
``bench/batch.py``'s figures on the same tiny pair."""
import pytest

from actors.core.engine import SpecEngine
from actors.costs.batch_costs import measure_batch_costs
from actors.drafter_kinds.registry import cost_probe
from actors.drafting.drafters import ModelDrafter
from actors.loading.tiny_pair import gpt2, llama, perturbed, sharpen
from bench.batch import gt_costs, ratio_interval, run_batches, stops_paying
from policies.costs import CostModel

SIZES, WIDTHS = (3, 1), (1, 4, 2)


@pytest.fixture(scope="module")
def surface():
    """The surface of a tiny Llama pair at B ∈ {1, 3} and L ∈ {1, 2, 4}, context 12, 2 repeats."""
    target = sharpen(llama(vocab=40, seed=3))
    return measure_batch_costs(target, cost_probe(ModelDrafter(perturbed(target, 0.2, seed=4))), sizes=SIZES,
                               widths=WIDTHS, context=12, repeats=2)


def test_shape_and_positive_times(surface):
    assert sorted(surface) == [1, 3]
    for entry in surface.values():
        assert set(entry) == {"knots", "values", "draft", "raw"}
        assert entry["values"] == sorted(entry["values"])        # the monotone fit of the raw medians
        assert sum(entry["values"]) == pytest.approx(sum(entry["raw"]))   # pooling keeps the total
        assert entry["knots"] == [1, 2, 4] and len(entry["values"]) == 3
        assert all(v > 0 for v in entry["values"]) and entry["draft"] > 0


def test_a_cost_model_reads_the_medians_back(surface):
    base = CostModel.measured(surface[1]["draft"], dict(zip(surface[1]["knots"], surface[1]["values"])))
    base.batch = surface
    model = CostModel.from_dict(base.to_dict())              # and it survives storage
    for B, entry in surface.items():
        for L, t in zip(entry["knots"], entry["values"]):
            assert model.batch_verify(B, L) == pytest.approx(t, rel=1e-12)
        assert model.batch_draft(B) == pytest.approx(entry["draft"], rel=1e-12)
    assert model.verify(2) == pytest.approx(surface[1]["values"][1])


def test_no_draft_model_prices_drafting_at_zero_and_other_families_work():
    target = gpt2(vocab=30, layers=1, hidden=16, seed=5)        # learned positions
    out = measure_batch_costs(target, None, sizes=(2,), widths=(3,), context=5, repeats=1)
    assert list(out) == [2] and out[2]["draft"] == 0.0 and out[2]["values"][0] > 0


def test_an_eagle_head_prices_a_batched_head_level():
    from actors.drafting.eagle_drafter import EagleDrafter
    from actors.drafting.eagle_head import init_head

    target = llama(vocab=40, layers=2, hidden=32, seed=3)
    out = measure_batch_costs(target, cost_probe(EagleDrafter(init_head(target, seed=1), target)), sizes=(1, 3),
                              widths=(1,),
                              context=6, repeats=2)
    assert sorted(out) == [1, 3] and all(out[b]["draft"] > 0 for b in out)


@pytest.mark.parametrize("kw", [{"sizes": (0, 2)}, {"widths": ()}, {"context": 0}, {"repeats": 0}])
def test_bad_settings_are_refused(kw):
    with pytest.raises(ValueError):
        measure_batch_costs(llama(vocab=20, layers=1, hidden=16), None, **{"sizes": (1,), "widths": (1,), **kw})


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


def test_the_surface_is_measured_on_the_engines_own_rows_runner(monkeypatch):
    """A static/compiled pair's batches run on the per-row static cache, so its surface is timed there too."""
    import actors.costs.batch_costs as bc
    from actors.runtime.static_batch_runner import StaticBatchRunner

    made = []
    real = bc.rows_runner

    def spy(*a, **k):
        made.append(real(*a, **k))
        return made[-1]
    monkeypatch.setattr(bc, "rows_runner", spy)
    target = llama(vocab=20, layers=1, hidden=16)
    out = measure_batch_costs(target, None, sizes=(1, 2), widths=(1, 3), context=6, repeats=1, engine="static")
    assert [type(r) for r in made] == [StaticBatchRunner, StaticBatchRunner]
    assert all(v > 0 for b in (1, 2) for v in out[b]["raw"])
