"""EAGLE heads in batches (``actors/drafting/batch_eagle.py``): every row's greedy output is its target-only output and its
steps are the single-row head's, for every chain, batch and tree policy at B ∈ {1, 2, 3, 5}; sampled rows follow
the target's distribution; masked head slots compacted at every level change nothing."""
from pathlib import Path

import pytest

from actors.drafting.batch_eagle import EagleRows
from actors.runtime.batch_runner import BatchRunner
from actors.drafting.eagle_drafter import EagleDrafter
from actors.drafting.eagle_head import init_head, save_head
from actors.core.engine import SpecEngine
from actors.loading.tiny_pair import llama, sharpen
from policies.base import BatchPolicy, SequencePolicy, TreePolicy
from policies.costs import CostModel
from policies.registry import REGISTRY, build
from tests.helpers import PROMPT, sampling_pair
from tests.sampling_check import SAMPLED_RUNS as RUNS, chi_square_pvalue, exact_joint

SIZES = (1, 2, 3, 5)
COSTS = CostModel.measured(0.002, {1: 0.02, 2: 0.021, 4: 0.022, 8: 0.025, 16: 0.03, 32: 0.05, 64: 0.09})
CHAIN = sorted(n for n, (cls, _, _) in REGISTRY.items() if issubclass(cls, SequencePolicy))
BATCH = sorted(n for n, (cls, _, _) in REGISTRY.items() if issubclass(cls, BatchPolicy))
TREES = ["sequoia:accept=0.6/0.2/0.1,budget=12,depth=4", "gt-static:c=0.05,accept=0.6/0.2/0.1",
         "eagle2:depth=3,topk=3,n=10", "gt-dynamic:c=0.02,topk=3,n_max=12"]
TRAINED = Path(__file__).resolve().parent / "fixtures" / "eagle_tiny" / "head"   # tests/fixtures/eagle_tiny/make.py
PROMPTS = [[3], [4, 9, 2, 7, 7, 1, 30, 12], [1, 2, 3, 4, 5, 6], [5, 9, 11, 23, 40] + [2] * 14 + [1, 1], [7, 7]]


@pytest.fixture(scope="module")
def head():
    """The tiny llama target and the head trained for it (drafts that are often accepted)."""
    target = sharpen(llama(vocab=70, seed=5))
    return target, TRAINED


def _refs(target, n, eos=()):
    return [SpecEngine(target, eos_token_ids=eos).generate(p, build("ar"), max_new_tokens=n).token_ids
            for p in PROMPTS]


def _policy(name, rows, gamma=4):
    pol = build(name, gamma)
    return pol if isinstance(pol, BatchPolicy) else [build(name, gamma) for _ in range(rows)]


@pytest.mark.parametrize("sizes", [(5,), pytest.param((1, 2, 3), marks=pytest.mark.slow)])    # fast: B = 5 holds
def test_every_chain_and_batch_policy_on_the_head_is_lossless_and_steps_like_one_row(head, sizes):  # every prompt
    target, folder = head
    refs = _refs(target, 24)
    batch = SpecEngine(target, EagleDrafter.from_folder(folder, target), costs=COSTS)
    single = SpecEngine(target, EagleDrafter.from_folder(folder, target), costs=COSTS)
    accepted = 0
    for name in CHAIN + BATCH:
        alone = None if name in BATCH else [single.generate(p, build(name, 4), max_new_tokens=24).accepted
                                             for p in PROMPTS[:max(sizes)]]
        for B in sizes:
            outs = batch.generate_batch(PROMPTS[:B], _policy(name, B), max_new_tokens=24)
            assert [o.token_ids for o in outs] == refs[:B], (name, B)
            if alone is not None:          # the head drafts what it drafts alone: same accepted counts per step
                assert [o.accepted for o in outs] == alone[:B], (name, B)
            accepted += sum(sum(o.accepted) for o in outs)
    assert accepted > 50 * sum(sizes)    # the head's drafts were really accepted (not a vacuous pass)


def test_every_tree_on_the_head_is_lossless(head):
    assert {t.split(":")[0] for t in TREES} == {n for n, (cls, _, _) in REGISTRY.items() if issubclass(cls, TreePolicy)}
    target, folder = head
    refs = _refs(target, 24)
    engine = SpecEngine(target, EagleDrafter.from_folder(folder, target), costs=COSTS)
    multi = 0
    for name in TREES:
        for B in SIZES:
            outs = engine.generate_batch(PROMPTS[:B], [build(name, 1) for _ in range(B)], max_new_tokens=24)
            assert [o.token_ids for o in outs] == refs[:B], (name, B)
            multi += sum(a > 1 for o in outs for a in o.accept_lengths)
    assert multi > 60


def test_head_slots_compacted_at_every_level_and_rows_leaving_at_eos(head, monkeypatch):
    monkeypatch.setattr(BatchRunner, "COMPACT_SLACK", -10 ** 6)
    monkeypatch.setattr(EagleRows, "COMPACT_SLACK", -10 ** 6)
    target, folder = head
    eos = _refs(target, 40)[1][6]
    refs = _refs(target, 40, eos=[eos])
    engine = SpecEngine(target, EagleDrafter.from_folder(folder, target), eos_token_ids=[eos], costs=COSTS)
    for pol in (_policy("fixed", 5, 8), build("gt-batch", 8), _policy("eagle2:depth=3,topk=3,n=10", 5)):
        outs = engine.generate_batch(PROMPTS, pol, max_new_tokens=40)
        assert [o.token_ids for o in outs] == refs
    assert len(refs[1]) < 40                   # row 1 really left early


@pytest.mark.slow            # 1,200 sampled batches: the slow tier
def test_sampled_rows_on_a_head_follow_the_target(tmp_path):
    """Six rows, three prompts twice, a random head drafting over part of the vocabulary: each prompt's first three
    tokens follow its exact joint distribution."""
    target, _ = sampling_pair()
    folder = save_head(init_head(target, seed=13), tmp_path / "s", kept=[0, 2, 3])
    prompts = [list(PROMPT), list(PROMPT[:1]), list(PROMPT) + [1, 2]]
    exact = [exact_joint(target, p, 3, 1.0) for p in prompts]
    engine = SpecEngine(target, EagleDrafter.from_folder(folder, target), costs=COSTS)
    rows, samples = prompts + prompts, [[] for _ in prompts]
    for run in range(RUNS // 2):
        outs = engine.generate_batch(rows, [build("fixed", 3) for _ in rows], max_new_tokens=3, temperature=1.0,
                                     seeds=6 * run)
        for i, o in enumerate(outs):
            samples[i % 3].append(o.token_ids)
    for i in range(len(prompts)):
        assert chi_square_pvalue(samples[i], exact[i]) > 1e-3, i



@pytest.mark.slow            # a whole (small) sweep: the slow tier
def test_a_sweep_batches_an_eagle_pair_and_replays_it_exactly(tmp_path):
    """An EAGLE pair in a sweep with ``batch_sizes: [1, 2]`` and ``mode: both``: its batch tasks run (none left out),
    each question's batch tokens equal its batch-1 tokens, and the replayed batch rows equal the live ones."""
    import contextlib
    import io

    from actors.loading.models import ModelSpec, load_model
    from actors.loading.tiny_pair import save_tiny_pair
    from jobs.config import parse_config
    from jobs.sweep.driver import run_sweep
    from jobs.store.parquet_log import ParquetLog

    target, _ = save_tiny_pair(tmp_path / "pair")
    folder = save_head(init_head(load_model(ModelSpec(target)), seed=2), tmp_path / "head")
    cfg = parse_config({"name": "be", "output": str(tmp_path / "out"), "tracking_uri": f"sqlite:///{tmp_path}/m.db",
                        "pairs": [{"name": "head", "target": target, "draft": f"eagle:{folder}"}],
                        "dataset": {"source": "sample", "question_ids": [9017, 9021]},
                        "generation": {"max_new_tokens": 8}, "policies": ["fixed", "tetris"], "gammas": [3],
                        "warmup": 0, "batch_sizes": [1, 2], "mode": "both",
                        "calibrate": {"context": 16, "max_tokens": 4, "repeats": 2, "judge": False}})
    with contextlib.redirect_stderr(io.StringIO()):
        res = run_sweep(cfg, backend="inprocess", log_mlflow=False)
    df = ParquetLog(cfg.output).read()
    assert res["failed_rows"] == 0, df[df["status"] != "ok"]["error"].tolist()
    assert set(df["pair"]) == {"head", "head@B2"}
    key = ["policy_spec", "question_id", "turn"]
    live = df[(df["mode"] == "live") & (df["policy"] != "ar")]
    one = live[live["batch_size"] == 1].set_index(key)["token_ids"].map(list).sort_index()
    two = live[live["batch_size"] == 2].set_index(key)["token_ids"].map(list).sort_index()
    assert len(two) == 4 and (one == two).all()
    rep = df[(df["mode"] == "replay") & (df["batch_size"] == 2)].set_index(key).sort_index()
    live2 = live[live["batch_size"] == 2].set_index(key).sort_index()
    assert len(rep) == 4
    for c in ("token_ids", "k_max", "drafted", "accepted"):
        assert (rep[c].map(list) == live2[c].map(list)).all(), c
