"""Model runners: one causal LM plus the KV cache holding a prefix of its token sequence.

Every runner answers the same three calls, so the engine and the drafters never see a
cache:

* ``forward(ids, last_only)`` appends ``ids`` at position ``length`` and returns the
  logits of the new positions, ``[len(ids), vocab]`` (``[1, vocab]`` when ``last_only``);
* ``rollback(n)`` keeps the first ``n`` positions (the accepted prefix);
* ``reset()`` empties the cache for a new generation.

With ``keep_features`` set (an EAGLE drafter reads them), every forward also leaves the model's
hidden states of the new positions in ``features`` [len(ids), width] — from the same forward
(``output_hidden_states``), never an extra one: the entries ``feature_layers`` of transformers'
hidden-states tuple concatenated (``actors/runtime/hf_api.py::hidden_features``; default ``(-1,)``, the final
hidden state, width = hidden).

Three engines (``ENGINES``):

``eager``
    transformers' ``DynamicCache``, cropped on rollback (any causal LM; CPU default).
``static``
    a position-indexed ``StaticCache`` of fixed capacity (the static-cache idea of
    gpt-fast, "Accelerating Generative AI with PyTorch II", 2023): ``rollback`` only
    moves the write position; rejected entries stay in place, are hidden by the causal
    mask built from ``cache_position`` (a query at position p attends keys ≤ p only) and
    are overwritten by the next step. Nothing is copied or cropped.
``compiled``
    ``static`` plus ``torch.compile`` of the forward and, on CUDA, one CUDA graph per
    input-length *bucket* (powers of two up to the largest verified length): an input of
    m tokens runs the graph of the smallest bucket b ≥ m, padded with copies of its last
    token; the padding writes cache entries beyond the accepted prefix, which are hidden
    and later overwritten exactly like rejected drafts. Padding takes the last real token's
    position id (its slot stays its own): a slot past a learned position table (GPT-2's
    ``wpe``) must never be looked up. Graphs are captured once, in
    ``prepare``, before anything is timed.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from typing import Sequence

import torch

from actors.runtime.hf_api import FINAL, cache_arg, hidden_features
from actors.runtime.kv import cached_length, crop_to, new_cache

ENGINES = ("eager", "static", "compiled")


def default_engine(device: torch.device) -> str:
    """``compiled`` on CUDA, ``eager`` elsewhere."""
    return "compiled" if device.type == "cuda" else "eager"


def buckets_up_to(m: int) -> list[int]:
    """Powers of two 1, 2, 4, … up to the first one ≥ ``m``."""
    out, b = [1], 1
    while b < m:
        b *= 2
        out.append(b)
    return out


def device_context(device):
    """``torch.cuda.device(device)`` for a CUDA device, a null context elsewhere. Rule: a CUDA graph is captured and
    replayed with its model's device current, on a stream of that device (``torch.cuda.graph``'s default capture
    stream belongs to whichever device was current when it was first made)."""
    device = torch.device(device)
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


class Staging:
    """A pinned host buffer whose contents reach the device by a non-blocking copy. Rule: the host side is rewritten
    only after the previous copy out of it ran (a CUDA event waits for that copy alone, not for the forward behind
    it): chunked prefills write it back to back, and a device that lags the host would otherwise copy a later
    chunk's ids for an earlier one. On the CPU the copy is done when ``copy_`` returns."""

    def __init__(self, host: torch.Tensor):
        self.host, self._copied = host, None

    def writable(self) -> torch.Tensor:
        if self._copied is not None:
            self._copied.synchronize()
            self._copied = None
        return self.host

    def upload(self, dst: torch.Tensor, used: int) -> None:
        dst[:used].copy_(self.host[:used], non_blocking=True)
        if dst.is_cuda:           # the copy runs on the destination device's current stream: the event waits there
            self._copied = torch.cuda.Event()
            self._copied.record(torch.cuda.current_stream(dst.device))


class EagerRunner:
    """DynamicCache runner: exact-size cache, cropped on rollback."""

    engine = "eager"

    def __init__(self, model):
        self.model = model
        self.device = model.device
        self.cache = None
        self.keep_features = False
        self.feature_layers = FINAL
        self.features = None

    @property
    def length(self) -> int:
        """Positions held (read from the cache: tree steps edit it in place)."""
        return cached_length(self.cache)

    def prepare(self, max_input: int) -> None:
        pass

    def reset(self) -> None:
        self.cache = new_cache(self.model)

    @torch.no_grad()
    def forward(self, ids: Sequence[int], last_only: bool = False) -> torch.Tensor:
        inp = torch.tensor([list(ids)], device=self.device)
        kw = {"logits_to_keep": 1} if last_only else {}
        if self.keep_features:
            kw["output_hidden_states"] = True
        out = self.model(input_ids=inp, **cache_arg(self.cache), use_cache=True, **kw)
        if self.keep_features:
            self.features = hidden_features(out.hidden_states, self.feature_layers)[0]
        return out.logits[0]

    def rollback(self, length: int) -> None:
        crop_to(self.cache, length)


def _positioned_static_cache(model, capacity: int, start: torch.Tensor):
    """transformers' ``StaticCache`` whose layers write at ``start + arange(m)`` (``start`` a shared 0-dim tensor).

    transformers' own static layers advance an internal counter on every write; a
    speculative step must instead move the write position back to the accepted prefix.
    Here the runner owns the position, so a rollback is one host integer.
    """
    from transformers import StaticCache  # heavy: transformers
    from transformers.cache_utils import StaticLayer  # heavy: transformers

    cache = StaticCache(config=model.config, max_cache_len=capacity)
    for layer in cache.layers:
        if type(layer) is not StaticLayer:
            raise TypeError(f"cache layer {type(layer).__name__} is not a plain static layer")
        layer.__class__ = _positioned_layer_class()
        layer.start = start
    return cache


@functools.lru_cache(maxsize=None)
def _positioned_layer_class():
    from transformers.cache_utils import StaticLayer  # heavy: transformers

    class PositionedLayer(StaticLayer):
        def update(self, key_states, value_states, *args, **kwargs):
            # key_states [batch, heads, m, head_dim] -> written at positions start .. start + m - 1
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            pos = torch.arange(key_states.shape[-2], device=self.keys.device) + self.start
            self.keys.index_copy_(2, pos, key_states)
            self.values.index_copy_(2, pos, value_states)
            return self.keys, self.values

        def get_seq_length(self, *args, **kwargs):
            return self.start if self.is_initialized else 0

    return PositionedLayer


def _accepts_cache_position(model) -> bool:
    inner = getattr(model, "model", None) if not hasattr(model, "get_input_embeddings") else model
    fwd = getattr(inner if inner is not None else model, "forward")
    return "cache_position" in inspect.signature(fwd).parameters


class StaticRunner:
    """Position-indexed static KV cache of ``capacity`` positions; optionally compiled and CUDA-graphed.

    ``capacity`` must cover the longest prompt + generation + the largest bucket.
    """

    MAX_BUCKET = 128

    def __init__(self, model, capacity: int, compiled: bool = False, inductor: bool | None = None):
        self.model = model
        self.device = model.device
        self.capacity = int(capacity)
        self.engine = "compiled" if compiled else "static"
        # _inp[0] = write position, _inp[1] = last real position, _inp[2:2 + m] = input ids: one host-to-device copy
        self._inp = torch.zeros(2 + self.MAX_BUCKET, dtype=torch.long, device=self.device)
        self._arange = torch.arange(self.MAX_BUCKET, dtype=torch.long, device=self.device)
        self.cache = _positioned_static_cache(model, self.capacity + self.MAX_BUCKET, self._inp[0])
        self._cache_position = _accepts_cache_position(model)
        self.keep_features = False
        self.feature_layers = FINAL
        self.features = None
        self.length = 0
        self._fn = model.forward
        self._graphs: dict[int, tuple] = {}     # bucket -> (CUDA graph, logits it writes)
        self._captured_for = None                # (keep_features, feature_layers) at capture
        self._buckets: list[int] = []
        self._use_graphs = compiled and self.device.type == "cuda"
        # torch.compile (Inductor) before capture: always on CPU (there are no graphs), optional on CUDA
        self.inductor = compiled and (not self._use_graphs if inductor is None else bool(inductor))
        if self.inductor:
            import torch._dynamo as dynamo  # heavy: torch._dynamo (1.7 s at start-up; only compiled runs need it)

            cfg = dynamo.config
            for name in ("recompile_limit", "cache_size_limit"):   # one compiled graph per bucket
                if hasattr(cfg, name):
                    setattr(cfg, name, max(getattr(cfg, name), 64))
            self._fn = torch.compile(model.forward, fullgraph=True, dynamic=False)
        pin = self.device.type == "cuda"
        self._staging = Staging(torch.zeros(2 + self.MAX_BUCKET, dtype=torch.long, pin_memory=pin))

    def _call(self, m: int, fn=None):
        """Reads ``_inp``: ids [1, m] written at slots ``_inp[0] + [0, m)`` -> (logits [1, m, vocab], features
        [1, m, h] or None). Rule: position ids are the slots clamped to ``_inp[1]``, the last real token's position,
        so bucket padding never indexes past a learned position table; ``cache_position`` (the causal mask and the
        writes) keeps the slots, so padding keys sit beyond every real query and stay hidden."""
        fn = fn or self._fn
        ids = self._inp[2:2 + m].unsqueeze(0)
        slots = self._arange[:m] + self._inp[0]
        pos = torch.minimum(slots, self._inp[1]).unsqueeze(0)
        kw = {"cache_position": slots} if self._cache_position else {}
        if self.keep_features:
            kw["output_hidden_states"] = True
        out = fn(input_ids=ids, **cache_arg(self.cache), position_ids=pos, use_cache=True, **kw)
        return out.logits, (hidden_features(out.hidden_states, self.feature_layers) if self.keep_features else None)

    @torch.no_grad()
    def prepare(self, max_input: int) -> None:
        """Compile and capture every bucket up to ``max_input`` tokens (once; before timing)."""
        if self.engine != "compiled":
            return
        need = [b for b in buckets_up_to(min(max_input, self.MAX_BUCKET)) if b not in self._buckets]
        if not need:
            return
        how = " + ".join(w for w, on in (("torch.compile", self.inductor), ("CUDA graphs", self._use_graphs)) if on)
        print(f"[specsweep] preparing {type(self.model).__name__} for input lengths {need} ({how}) ...",
              file=sys.stderr, flush=True)
        self._inp.zero_()
        self._captured_for = (self.keep_features, tuple(self.feature_layers))
        for b in need:
            if not self._use_graphs:
                self._call(b)          # compiles this shape now rather than during a timed step
            else:
                with device_context(self.device):
                    stream = torch.cuda.Stream(self.device)
                    stream.wait_stream(torch.cuda.current_stream(self.device))
                    with torch.cuda.stream(stream):
                        for _ in range(3):
                            self._call(b)
                    torch.cuda.current_stream(self.device).wait_stream(stream)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, stream=stream):
                        outputs = self._call(b)
                self._graphs[b] = (graph, outputs)
            self._buckets.append(b)
        self._buckets.sort()
        self.length = 0

    def reset(self) -> None:
        """An empty sequence (stale entries are masked and overwritten; nothing to clear). Graphs captured while other
        features were kept (an EAGLE head set ``keep_features``/``feature_layers`` after ``prepare``) are captured
        again: a graph's outputs are fixed at capture."""
        self.length = 0
        kept = (self.keep_features, tuple(self.feature_layers))
        if self._buckets and kept != self._captured_for:
            largest = max(self._buckets)
            self._graphs, self._buckets = {}, []
            self.prepare(largest)

    @torch.no_grad()
    def forward(self, ids: Sequence[int], last_only: bool = False) -> torch.Tensor:
        ids = [int(t) for t in ids]
        m, start = len(ids), self.length
        if start + m > self.capacity:
            raise ValueError(f"static KV cache of {self.capacity} positions is full ({start} + {m} tokens): "
                             "raise the pair's max_context")
        bucket = next((b for b in self._buckets if b >= m), None)
        n = bucket or m
        if n > self.MAX_BUCKET:       # a long input: the cache itself is the only state, feed it in chunks
            feats, parts = [], []
            for i in range(0, m, self.MAX_BUCKET):
                # a clone: a captured graph's output buffer is overwritten by the next chunk's replay
                parts.append(self.forward(ids[i:i + self.MAX_BUCKET], last_only=last_only).clone())
                feats.append(self.features.clone() if self.keep_features else None)     # a view of it too
            self.features = torch.cat(feats) if self.keep_features else None
            self.length = start + m
            return parts[-1] if last_only else torch.cat(parts)      # a verify of > MAX_BUCKET: every position
        host = self._staging.writable()
        host[0], host[1] = start, start + m - 1    # padding's position ids clamp to the last real one (``_call``)
        host[2:2 + m] = torch.tensor(ids)
        host[2 + m:2 + n] = ids[-1]            # bucket padding: written beyond the prefix, masked, overwritten later
        self._staging.upload(self._inp, 2 + n)
        if bucket is not None and self._use_graphs:
            graph, (logits, feats) = self._graphs[bucket]
            with device_context(self.device):
                graph.replay()
        elif bucket is not None:
            logits, feats = self._call(bucket)
        else:
            # prefill and long catch-ups run eagerly on the same cache (compiling them would add one graph per length)
            logits, feats = self._call(m, fn=self.model.forward)
        logits = logits[0, :m]
        self.features = feats[0, :m] if feats is not None else None
        self.length = start + m
        return logits[-1:] if last_only else logits

    def rollback(self, length: int) -> None:
        self.length = min(self.length, length)


@torch.no_grad()
def target_features(model, ids: Sequence[int], layers=FINAL) -> torch.Tensor:
    """The hidden states at ``layers`` [len(ids), width] of one eager forward of ``ids`` from an empty cache, through
    the runner seam (an EAGLE head's teacher-forced features for per-rank acceptance and for trace rollouts)."""
    runner = EagerRunner(model)
    runner.keep_features, runner.feature_layers = True, layers
    runner.reset()
    runner.forward(list(ids), last_only=True)
    return runner.features


def make_runner(model, engine: str, capacity: int = 4096, inductor: bool | None = None):
    """A runner for ``engine``; a model without static-cache support falls back to eager with one line."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r} is not valid: use one of {', '.join(ENGINES)}")
    if engine == "eager":
        return EagerRunner(model)
    try:
        runner = StaticRunner(model, capacity, compiled=engine == "compiled", inductor=inductor)
        runner.forward([0], last_only=True)      # the model must accept a static cache and cache_position
        runner.reset()
        return runner
    except Exception as e:  # noqa: BLE001 - any failure here means the model cannot use this engine
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        print(f"[specsweep] {type(model).__name__} cannot use engine {engine} ({first}); using eager",
              file=sys.stderr, flush=True)
        return EagerRunner(model)
