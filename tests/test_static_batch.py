"""The per-row static cache (actors/runtime/static_batch_runner.py): the same logits as the gap-masked eager batch runner,
and batches on the static engine lossless (greedy equals each row's target-only output; sampling its distribution)."""

import pytest
import torch

from actors.runtime.batch_runner import BatchRunner
from actors.drafting.drafters import ModelDrafter, NgramDrafter
from actors.core.engine import SpecEngine
from actors.runtime.static_batch_runner import StaticBatchRunner
from actors.loading.tiny_pair import gpt2, llama, perturbed, sharpen
from policies.fixed import Fixed, TargetOnly
from policies.registry import build
from tests.sampling_check import chi_square_pvalue, exact_joint

PROMPTS = [[3, 4, 5, 6, 7, 8, 9], [6, 7], [1, 2, 3, 4], [9], [2, 4, 6, 8, 10, 12, 14, 16, 18]]


def _pair(arch, vocab=64):
    target = sharpen(arch(vocab=vocab, seed=vocab))
    return target, perturbed(target, 0.25, seed=vocab + 1)


def _close(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("arch", [llama, gpt2], ids=["llama", "gpt2"])
def test_same_logits_as_the_gap_masked_runner(arch):
    """Ragged feeds, per-row rollbacks (stale slots stay), finished rows leaving, and a tree step with keep_fed."""
    target, _ = _pair(arch)
    static, eager = StaticBatchRunner(target, capacity=64), BatchRunner(target)
    for r in (static, eager):
        r.reset(3)
    feeds = [[1, 2, 3, 4, 5], [6, 7], [8]]
    _close(static.forward(feeds), eager.forward(feeds))
    for r in (static, eager):
        r.rollback(0, 3)                # row 0 keeps 1 2 3: 4 and 5 stay in their slots, masked
        r.rollback(1, 1)
    feeds = [[9, 9, 9], [], [4, 5, 6, 7]]
    _close(static.forward(feeds), eager.forward(feeds))
    _close(static.forward([[1], [2], [3]], last_only=True), eager.forward([[1], [2], [3]], last_only=True))
    assert static.lengths == eager.lengths
    for r in (static, eager):
        r.keep_rows([2, 0])             # row 1 finished; rows renumbered
    _close(static.forward([[5, 6], [7]]), eager.forward([[5, 6], [7]]))
    feeds, parents = [[3, 10, 11, 12, 13], [4, 20, 21]], [[-1, 0, 0, 1, 3], [-1, 0, 1]]
    L = list(eager.lengths)
    _close(static.forward_tree(feeds, parents), eager.forward_tree(feeds, parents))
    assert static.lengths == L          # a tree's slots count once keep_fed says which stay
    for r in (static, eager):
        r.keep_fed(0, [0, 1, 3, 4], L[0] + 4)        # root, 10, 12, 13
        r.keep_fed(1, [0, 2], L[1] + 2)              # a path that skips a slot: its key moves down
    assert static.lengths == eager.lengths
    _close(static.forward([[1, 2], [3, 4]]), eager.forward([[1, 2], [3, 4]]))


def test_long_prefill_runs_in_chunks():
    target, _ = _pair(llama, vocab=32)
    static, eager = StaticBatchRunner(target, capacity=400), BatchRunner(target)
    feeds = [[(i * 7) % 31 + 1 for i in range(300)], [(i * 5) % 31 + 1 for i in range(140)]]
    for r in (static, eager):
        r.reset(2)
        r.forward(feeds, logits=False)
    _close(static.forward([[1, 2], [3]]), eager.forward([[1, 2], [3]]))


@pytest.mark.parametrize("rows", [1, 3, 5])
@pytest.mark.parametrize("kind", ["model", "ngram"])
def test_static_batches_equal_target_only(rows, kind):
    """B ∈ {1, 3, 5} rows of different lengths on the static engine: every row is its target-only output."""
    target, draft = _pair(llama)
    prompts = PROMPTS[:rows]
    refs = [SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=24).token_ids for p in prompts]
    drafter = ModelDrafter(draft) if kind == "model" else NgramDrafter()
    engine = SpecEngine(target, drafter, engine="static", capacity=128)
    for gamma in (1, 3, 6):
        outs = engine.generate_batch(prompts, [Fixed(gamma) for _ in prompts], max_new_tokens=24)
        assert [o.token_ids for o in outs] == refs, gamma
    if rows > 1:
        assert isinstance(engine.runners._batch, StaticBatchRunner)
    ar = engine.generate_batch(prompts, [TargetOnly() for _ in prompts], max_new_tokens=24)
    assert [o.token_ids for o in ar] == refs


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("spec", ["eagle2:depth=3,topk=3,n=8", "sequoia:budget=8,depth=4"])
def test_static_tree_batches_equal_target_only(rows, spec):
    target, draft = _pair(llama)
    prompts = PROMPTS[:rows]
    refs = [SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=20).token_ids for p in prompts]
    engine = SpecEngine(target, ModelDrafter(draft), engine="static", capacity=128)
    if spec.startswith("sequoia"):
        from actors.costs.calibrate import rank_acceptance

        engine.rank_acceptance = rank_acceptance(target, draft, prompts[:1], max_new_tokens=12)
    outs = engine.generate_batch(prompts, [build(spec, 3) for _ in prompts], max_new_tokens=20)
    assert [o.token_ids for o in outs] == refs
    assert isinstance(engine.runners._batch, StaticBatchRunner)
    assert max(max(o.accept_lengths) for o in outs) >= 2


@pytest.mark.slow          # 3 × 600 sampled batches
def test_static_batch_sampling_matches_target_distribution():
    """Each row of a static-engine batch is distributed as the target alone (chi-square on 3-token continuations)."""
    target = sharpen(llama(vocab=5, layers=1, hidden=16, seed=11), 2.0)
    draft = sharpen(perturbed(target, 1.0, seed=12), 3.0)
    prompts = [[1, 2, 3, 1, 2], [4, 4], [2, 1, 0, 3]]
    engine = SpecEngine(target, ModelDrafter(draft), engine="static", capacity=32)
    runs = [[] for _ in prompts]
    for i in range(600):
        outs = engine.generate_batch(prompts, [Fixed(3) for _ in prompts], max_new_tokens=3, temperature=1.0,
                                     seeds=[3 * i, 3 * i + 1, 3 * i + 2])
        for b, o in enumerate(outs):
            runs[b].append(o.token_ids)
    for p, r in zip(prompts, runs):
        assert chi_square_pvalue(r, exact_joint(target, p, 3, 1.0)) > 1e-3


@pytest.mark.slow          # torch.compile of every (rows, length) shape on CPU
def test_compiled_batches_are_lossless_on_cpu():
    target, draft = _pair(llama, vocab=32)
    prompts = PROMPTS[:3]
    refs = [SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=12).token_ids for p in prompts]
    engine = SpecEngine(target, ModelDrafter(draft), engine="compiled", capacity=64, max_draft=3)
    outs = engine.generate_batch(prompts, [Fixed(3) for _ in prompts], max_new_tokens=12)
    assert [o.token_ids for o in outs] == refs
    assert engine.runners._batch.engine == "compiled"


def test_a_chain_verify_longer_than_one_bucket_returns_every_position():
    """A verify of more than ``MAX_BUCKET`` tokens runs in chunks: every position's logits come back (one row and a
    batch, as the gap-masked runner gives them), and a γ of 140 stays lossless on the static engine."""
    from actors.runtime.runners import EagerRunner, StaticRunner

    target = sharpen(llama(vocab=50, seed=50))
    prompts = [[1, 2, 3, 4, 5], [7, 8, 9]]
    feed = (list(range(10, 50)) * 4)[:141]
    want = []
    for p in prompts:
        one = EagerRunner(target)
        one.reset()
        one.forward(p[:-1], last_only=True)
        want.append(one.forward([p[-1]] + feed))
    static = StaticBatchRunner(target, 512)
    static.reset(2)
    static.forward([p[:-1] for p in prompts], logits=False)
    got = static.forward([[p[-1]] + feed for p in prompts])
    for g, w in zip(got, want):
        assert g.shape == w.shape == (142, 50)
        torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4)
    single = StaticRunner(target, 512)
    single.reset()
    single.forward(prompts[0][:-1], last_only=True)
    torch.testing.assert_close(single.forward([prompts[0][-1]] + feed), want[0], atol=1e-4, rtol=1e-4)
    n = 150
    ref = [SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=n).token_ids for p in prompts]
    for rows in (1, 2):
        eng = SpecEngine(target, ModelDrafter(target), engine="static", capacity=512)
        outs = eng.generate_batch(prompts[:rows], [build("fixed", 140) for _ in range(rows)], max_new_tokens=n)
        assert [o.token_ids for o in outs] == ref[:rows]
        assert max(outs[0].accept_lengths) > 128           # the long verify ran and was accepted whole


def test_a_draft_narrower_than_the_target_stays_exact_under_sampling():
    """One tokenizer, embeddings padded to different sizes (the target scores 2 ids more, which it never emits): the
    residual gives those ids q = 0, so sampled chains and trees follow the target (chi-square on 2-token outputs);
    a draft scoring more ids than the target is refused in one line."""
    from actors.core.acceptance import residual
    from actors.loading.models import check_output_widths
    from policies.errors import SpecsweepError

    target = sharpen(llama(vocab=7, layers=1, hidden=16, seed=21), 2.0)
    head = torch.nn.Linear(16, 7, bias=True)
    with torch.no_grad():
        head.weight.copy_(target.lm_head.weight)
        head.bias.zero_()
        head.bias[5:] = -1e4                    # the padding rows: never emitted
    target.lm_head = head
    draft = sharpen(llama(vocab=5, layers=1, hidden=16, seed=22), 2.0)
    p, q = torch.tensor([0.1, 0.2, 0.3, 0.2, 0.1, 0.1, 0.0]), torch.tensor([0.5, 0.1, 0.1, 0.2, 0.1])
    torch.testing.assert_close(residual(p, q, 0), torch.tensor([0.0, 0.1, 0.2, 0.0, 0.0, 0.1, 0.0]) / 0.4)
    prompt = [1, 2, 3]
    want = exact_joint(target, prompt, 2, 1.0)
    for spec in ("fixed", "sequoia:accept=0.5/0.3,budget=4,depth=2"):
        engine = SpecEngine(target, ModelDrafter(draft))
        runs = [engine.generate(prompt, build(spec, 2), max_new_tokens=2, temperature=1.0, seed=i).token_ids
                for i in range(400)]
        assert chi_square_pvalue(runs, want) > 1e-3, spec
    with pytest.raises(SpecsweepError, match="scores 7 token ids, more than target t's 5"):
        check_output_widths(draft, target, "t", "d")
    check_output_widths(target, draft, "t", "d")


def test_a_one_token_prompt_in_a_batch_counts_no_prefill_forward_of_its_own():
    target = sharpen(llama(vocab=50, seed=1))
    for engine in ("eager", "static"):
        eng = SpecEngine(target, engine=engine, capacity=64)
        alone = eng.generate([3], build("ar"), max_new_tokens=5)
        short, long = eng.generate_batch([[3], [1, 2, 3, 4]], [build("ar"), build("ar")], max_new_tokens=5)
        assert short.token_ids == alone.token_ids and short.target_calls == alone.target_calls == 5, engine
        assert long.target_calls == 6 and short.prefill_time > 0           # it waited for the batch's prefill


def test_a_target_emitting_ids_the_narrower_draft_cannot_read_stays_exact():
    """The target's 2 extra ids are emitted (no padding bias): the draft reads them as its pad id, so chains, trees
    and batches on both engines still give the target-only output (the draft cannot embed them)."""
    target = sharpen(llama(vocab=9, layers=1, hidden=16, seed=31), 2.0)
    draft = sharpen(llama(vocab=6, layers=1, hidden=16, seed=32), 2.0)
    prompts = [[1, 2, 3], [4, 5], [2, 7, 8, 1]]
    ref = [SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=24).token_ids for p in prompts]
    assert any(t >= 6 for r in ref for t in r)             # the case: ids past the draft's embedding are emitted
    for spec in ("fixed", "sequoia:accept=0.5/0.3,budget=4,depth=2"):
        got = [SpecEngine(target, ModelDrafter(draft)).generate(p, build(spec, 3), max_new_tokens=24).token_ids
               for p in prompts]
        assert got == ref, spec
    for engine in ("eager", "static"):
        eng = SpecEngine(target, ModelDrafter(draft), engine=engine, capacity=64)
        outs = eng.generate_batch(prompts, [build("fixed", 3) for _ in prompts], max_new_tokens=24)
        assert [o.token_ids for o in outs] == ref, engine
