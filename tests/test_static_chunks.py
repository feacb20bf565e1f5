"""Static runners: chunked (> 128-token) feeds keep every chunk's own features under graph replay, and bucket / row
padding never looks a position up past a learned position table.

A captured CUDA graph writes its outputs into one persistent buffer on every replay; ``_FakeGraph`` does the same on
the CPU, so the aliasing shows without a GPU."""
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from actors.loading.tiny_pair import llama
from actors.runtime.runners import EagerRunner, StaticRunner, target_features
from actors.runtime.static_batch_runner import StaticBatchRunner


class _FakeGraph:
    """A CUDA graph's contract on the CPU: ``replay`` reruns the forward into the same output tensors."""

    def __init__(self, call):
        self.call = call
        logits, feats = call()
        self.out = (logits.clone(), feats.clone())

    def replay(self):
        logits, feats = self.call()
        self.out[0].copy_(logits)
        self.out[1].copy_(feats)


def _ids(n, seed, vocab=96):
    return torch.randint(3, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def _close(a, b):
    assert torch.allclose(a, b, atol=1e-4, rtol=1e-4), (a - b).abs().max().item()


@torch.no_grad()
def test_a_chunked_feed_keeps_each_chunks_features_under_graph_replay():
    model = llama()
    ids = _ids(300, 1)
    ref = target_features(model, ids)
    r = StaticRunner(model, 600)
    r.keep_features = True
    for b in (1, 2, 4, 8, 16, 32, 64, 128):
        g = _FakeGraph(lambda b=b: r._call(b))
        r._graphs[b] = (g, g.out)
        r._buckets.append(b)
    r._use_graphs, r.engine, r._captured_for = True, "compiled", (True, tuple(r.feature_layers))
    r.reset()
    r.forward(ids, last_only=True)
    assert r.features.shape == ref.shape
    _close(r.features, ref)


@torch.no_grad()
def test_a_chunked_batch_feed_keeps_each_chunks_features_under_graph_replay():
    model = llama()
    ids, ids2 = _ids(300, 1), _ids(260, 2)
    br = StaticBatchRunner(model, 600, compiled=False)
    br.engine, br.keep_features = "compiled", True
    br.prepare(65)
    br.reset(2)
    for key in list(br._graphs):
        g = _FakeGraph(lambda key=key: br._call(*key))
        br._graphs[key] = (g, g.out)
    br.reset(2)
    br.forward([ids, ids2], logits=False)
    for got, row in zip(br.features, (ids, ids2)):
        _close(got, target_features(model, row))


def _short_gpt2():
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(vocab_size=96, n_positions=64, n_embd=32, n_layer=2, n_head=4)).eval()


@torch.no_grad()
def test_bucket_padding_stays_inside_a_learned_position_table():
    model = _short_gpt2()
    prompt, step = _ids(58, 3), [5, 6, 7, 8, 9]
    eager = EagerRunner(model)
    eager.reset()
    eager.forward(prompt, last_only=True)
    want = eager.forward(step)
    r = StaticRunner(model, 64)
    r.reset()
    r._buckets = [1, 2, 4, 8]                 # what a compiled prepare(9) captures: 5 tokens pad to 8
    r.forward(prompt, last_only=True)
    _close(r.forward(step), want)             # padding at slots 63 .. 65 of a 64-position table
    assert r.length == 63
    r.rollback(60)                            # the padding's keys stay hidden after a rollback
    eager.rollback(60)
    _close(r.forward([11, 12]), eager.forward([11, 12]))


@pytest.mark.parametrize("compiled", [False, True])
@torch.no_grad()
def test_row_padding_stays_inside_a_learned_position_table(compiled):
    model = _short_gpt2()
    prompts = [_ids(62, 4), [3, 4, 5]]
    steps = [[1], [1, 2, 3, 4, 5, 6, 7, 8]]     # row 0 (62 held) pads to 8: slots up to 69 of a 64-position table
    br = StaticBatchRunner(model, 64)
    if compiled:                                # graph-sized inputs: row 0 pads past the table, row 1 to bucket 8
        br.engine = "compiled"
        br.prepare(8)
    br.reset(2)
    br.forward(prompts, logits=False)
    got = br.forward(steps)
    for b, (p, s) in enumerate(zip(prompts, steps)):
        eager = EagerRunner(model)
        eager.reset()
        eager.forward(p, last_only=True)
        _close(got[b], eager.forward(s))
    trees = br.forward_tree([[2], [1, 2, 3]], [[-1], [-1, 0, 0]])    # tree padding too: row 0 at 63 of 64
    assert trees[0].shape[0] == 1 and trees[1].shape[0] == 3
