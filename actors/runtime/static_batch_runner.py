"""B rows of one causal LM in one position-indexed static KV cache, optionally compiled into CUDA graphs.

The static-cache idea of gpt-fast ("Accelerating Generative AI with PyTorch II", 2023), per row: the cache holds
keys ``[B, heads, C, head_dim]`` and row b's *slot* s is its position s. A forward feeds every row ``m`` tokens
(rows fed fewer are padded); fed token i of row b is written to slot ``start[b] + i`` with ``start[b]`` the row's
length, so a rollback is one host integer per row and nothing is ever copied, cropped or compacted. Rejected
drafts and padding stay in their slots, hidden by the mask, and are overwritten by the row's next forward.
Padding's position id is its row's last real position (the last fed token's, else the last committed one's, else 0),
never its slot: a slot past a learned position table (GPT-2's ``wpe``) must not be looked up.

What fed token i of row b may attend to is one rule for chains and trees:

    allowed(b, i, s) = s < start[b]                                  (the row's committed tokens)
                       or (0 ≤ s − start[b] < m and sees[b, i, s − start[b]])   (fed tokens it may see)

``sees`` is lower-triangular for a chain (each token sees the ones fed before it) and "itself and its ancestors"
for a tree, whose node i sits at position ``start + depth(i)``. After a tree step ``keep_fed`` moves the accepted
path's slots down to ``start + 0, 1, …`` — the positions their keys were rotated for — so the row again holds
positions ``0 … length − 1`` in slots ``0 … length − 1``.

``compiled``: one CUDA graph per (row bucket, input bucket) — powers of two up to the rows of the generation and
the largest verified length — captured when a generation of that many rows is first set up, never while timed
(on CPU: ``torch.compile`` instead). Finished rows leave by moving the running rows' cache rows to the front; the
next forward runs the smallest row bucket that holds them, its extra rows padding. Every input of a graph
(ids, positions, starts, ``sees``) lives in one device buffer filled by one host-to-device copy per forward.
"""
from __future__ import annotations

import functools
import sys
from typing import Sequence

import torch

from actors.runtime.hf_api import FINAL, cache_arg, hidden_features
from actors.runtime.runners import Staging, buckets_up_to, device_context


@functools.lru_cache(maxsize=None)
def _row_slot_layer_class():
    from transformers.cache_utils import StaticLayer  # heavy: transformers

    class RowSlotLayer(StaticLayer):
        """A static layer writing fed token i of row b at slot ``owner.slots[b, i]`` (its position)."""

        def update(self, key_states, value_states, *args, **kwargs):
            # key_states [B', heads, m, head_dim] -> keys[b, :, slots[b, i]] for the first B' rows
            if not self.is_initialized:     # on this layer's own device (a sharded target spans several)
                shape = (self.owner.allocated, key_states.shape[1], self.max_cache_len, key_states.shape[-1])
                self.keys = torch.zeros(shape, dtype=key_states.dtype, device=key_states.device)
                self.values = torch.zeros(shape, dtype=value_states.dtype, device=value_states.device)
                self.is_initialized = True
            rows, m = key_states.shape[0], key_states.shape[-2]
            idx = self.owner.slots[:rows, :m][:, None, :, None]
            keys, values = self.keys[:rows], self.values[:rows]
            keys.scatter_(2, idx.expand_as(key_states), key_states)
            values.scatter_(2, idx.expand_as(value_states), value_states)
            return keys, values

        def get_seq_length(self, *args, **kwargs):
            return 0

    return RowSlotLayer


class StaticBatchRunner:
    """The rows seam (``actors/runtime/row_runners.py``) on a per-row position-indexed static cache (module docstring).

    ``capacity``: positions a row may hold (prompt + generation); the cache keeps ``MAX_BUCKET`` more slots for
    the padding of the last forward."""

    MAX_BUCKET = 128

    def __init__(self, model, capacity: int, compiled: bool = False, inductor: bool | None = None,
                 pad_id: int = 0):
        self.model, self.device, self.pad_id = model, model.device, int(pad_id)
        self.capacity = int(capacity)
        self.engine = "compiled" if compiled else "static"
        devices = {p.device for p in model.parameters()}
        self._use_graphs = compiled and self.device.type == "cuda" and len(devices) == 1
        if compiled and len(devices) > 1:        # a sharded target (device_map over GPUs): one graph cannot span them
            print(f"[specsweep] {type(model).__name__} spans {len(devices)} devices: its batches run on the static "
                  "cache without CUDA graphs", file=sys.stderr, flush=True)
        self.inductor = compiled and (not self._use_graphs if inductor is None else bool(inductor))
        self._fn = model.forward
        if self.inductor:
            import torch._dynamo as dynamo  # heavy: torch._dynamo (only compiled runs need it)

            for name in ("recompile_limit", "cache_size_limit"):   # one compiled graph per (rows, length) bucket
                if hasattr(dynamo.config, name):
                    setattr(dynamo.config, name, max(getattr(dynamo.config, name), 256))
            self._fn = torch.compile(model.forward, fullgraph=True, dynamic=False)
        dtype = next(model.parameters()).dtype
        self._mask_dtype = dtype if dtype.is_floating_point else torch.float32
        self.keep_features = False
        self.feature_layers = FINAL           # which hidden states (``actors/runtime/hf_api.py::hidden_features``)
        self.features: list[torch.Tensor] = []
        self._captured_for = None             # (keep_features, feature_layers) the graphs were captured with
        self.cache = None
        self._alloc = 0                       # physical rows of the cache
        self._max_input = 1                   # the largest input length graphs are captured for
        self._graphs: dict[tuple[int, int], tuple] = {}    # (row bucket, input bucket) -> (graph, outputs)
        self.lengths: list[int] = []

    # ----------------------------------------------------------------------------------------------- set-up
    @property
    def rows(self) -> int:
        """Rows in the batch."""
        return len(self.lengths)

    def prepare(self, max_input: int) -> None:
        """Inputs of up to ``max_input`` tokens run graphs (captured at the next :meth:`reset`)."""
        self._max_input = max(self._max_input, min(int(max_input), self.MAX_BUCKET))

    def reset(self, rows: int) -> None:
        """An empty batch of ``rows`` rows (the cache grows to hold them; graphs are captured for them now)."""
        if rows < 1:
            raise ValueError(f"a batch holds at least 1 row, not {rows}")
        if rows > self._alloc:
            self._allocate(rows)
        self.lengths = [0] * rows
        if self.engine == "compiled":
            if self._captured_for != (self.keep_features, tuple(self.feature_layers)):
                self._graphs = {}            # the graphs' outputs depend on which features they keep
                self._captured_for = (self.keep_features, tuple(self.feature_layers))
            self._capture(rows)

    def _allocate(self, rows: int) -> None:
        from transformers import StaticCache  # heavy: transformers

        slots = self.capacity + self.MAX_BUCKET
        self.cache = StaticCache(config=self.model.config, max_cache_len=slots)
        layer_cls = _row_slot_layer_class()
        for layer in self.cache.layers:          # keys allocated at each layer's first write, on its device
            if type(layer).__name__ != "StaticLayer":
                raise TypeError(f"cache layer {type(layer).__name__} is not a plain static layer")
            layer.__class__ = layer_cls
            layer.owner = self
        m = self.MAX_BUCKET
        # one device buffer for every graph input; _views(B', m) cuts it the same way on host and device
        self._inp = torch.zeros(rows * (3 * m + 1 + m * m), dtype=torch.long, device=self.device)
        self._staging = Staging(torch.zeros_like(self._inp, device="cpu").pin_memory() if self.device.type == "cuda"
                                else torch.zeros_like(self._inp))
        self._slot_ar = torch.arange(slots, device=self.device)
        self._in_ar = torch.arange(m, device=self.device)
        self.slots = torch.zeros(rows, m, dtype=torch.long, device=self.device)
        self._alloc, self._graphs = rows, {}

    @property
    def allocated(self) -> int:
        """Rows the cache holds (a batch of fewer rows leaves the rest unused)."""
        return self._alloc

    @staticmethod
    def _views(buf: torch.Tensor, rows: int, m: int):
        """(ids [rows, m], positions [rows, m], starts [rows], sees [rows, m, m]) cut from the front of ``buf``."""
        a, b = rows * m, rows * m * 2
        return (buf[:a].view(rows, m), buf[a:b].view(rows, m), buf[b:b + rows],
                buf[b + rows:b + rows + rows * m * m].view(rows, m, m))

    def _call(self, rows: int, m: int, fn=None):
        """One forward of the first ``rows`` rows × ``m`` tokens, every input read from the device buffer:
        (logits [rows, m, V], hidden states at ``feature_layers`` [rows, m, width] or None)."""
        ids, pos, start, sees = self._views(self._inp, rows, m)
        self.slots[:rows, :m] = start[:, None] + self._in_ar[:m]
        rel = self._slot_ar[None, None, :] - start[:, None, None]                       # [rows, 1, slots]
        inside = (rel >= 0) & (rel < m)
        seen = torch.gather(sees != 0, 2, rel.clamp(0, m - 1).expand(rows, m, rel.shape[-1])) & inside
        allowed = (rel < 0) | seen                                                       # [rows, m, slots]
        mask = torch.zeros(allowed.shape, dtype=self._mask_dtype, device=self.device)
        mask = mask.masked_fill(~allowed, torch.finfo(self._mask_dtype).min)[:, None]    # [rows, 1, m, slots]
        kw = {"output_hidden_states": True} if self.keep_features else {}
        out = (fn or self._fn)(input_ids=ids, attention_mask=mask, position_ids=pos, **cache_arg(self.cache),
                               use_cache=True, **kw)
        return out.logits, (hidden_features(out.hidden_states, self.feature_layers) if self.keep_features else None)

    @torch.no_grad()
    def _capture(self, rows: int) -> None:
        row_buckets = sorted(set(b for b in buckets_up_to(rows) if b <= rows) | {rows})
        need = [(r, m) for r in row_buckets for m in buckets_up_to(self._max_input) if (r, m) not in self._graphs]
        if not need:
            return
        how = " + ".join(w for w, on in (("torch.compile", self.inductor), ("CUDA graphs", self._use_graphs)) if on)
        print(f"[specsweep] preparing {type(self.model).__name__} for {len(need)} (rows, input length) shapes up to "
              f"{rows} rows × {max(m for _, m in need)} tokens ({how}) ...", file=sys.stderr, flush=True)
        self._inp.zero_()
        if not self.cache.layers[0].is_initialized:
            self._call(1, 1, fn=self.model.forward)     # allocates each layer's keys eagerly, before any trace
        for r, m in need:
            if not self._use_graphs:
                self._call(r, m)                 # compiles the shape now rather than during a timed step
                self._graphs[(r, m)] = None
                continue
            with device_context(self.device):    # captured on a stream of the model's device (runners.device_context)
                stream = torch.cuda.Stream(self.device)
                stream.wait_stream(torch.cuda.current_stream(self.device))
                with torch.cuda.stream(stream):
                    for _ in range(3):
                        self._call(r, m)
                torch.cuda.current_stream(self.device).wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, stream=stream):
                    outputs = self._call(r, m)
            self._graphs[(r, m)] = (graph, outputs)

    # ----------------------------------------------------------------------------------------------- forwards
    @torch.no_grad()
    def forward(self, feeds: Sequence[Sequence[int]], last_only: bool = False,
                logits: bool = True) -> list[torch.Tensor]:
        """Append ``feeds[b]`` after row b's positions; each row's logits ``[len(feeds[b]), V]`` (``[1, V]`` when
        ``last_only``; ``[]`` when not ``logits``). Longer inputs than ``MAX_BUCKET`` run in chunks."""
        self._check(feeds)
        m = max(len(f) for f in feeds)
        if m <= self.MAX_BUCKET:
            return self._run(feeds, None, last_only, logits)
        parts, feats = [[] for _ in feeds], [[] for _ in feeds]
        for i in range(0, m, self.MAX_BUCKET):
            chunk = [list(f[i:i + self.MAX_BUCKET]) for f in feeds]
            out = self._run(chunk, None, last_only, True)
            for b, f in enumerate(chunk):
                if f:
                    # a clone: a captured graph's output buffer is overwritten by the next chunk's replay
                    parts[b].append(out[b].clone())
                    if self.keep_features:            # the features are a view of that buffer too
                        feats[b].append(self.features[b].clone())
        if self.keep_features:
            self.features = [torch.cat(x) if x else None for x in feats]
        if not logits:
            return []
        # last_only: each row's last chunk's last position; else every position of every chunk (a verify > MAX_BUCKET)
        return [(x[-1] if last_only else torch.cat(x)) if x else None for x in parts]

    @torch.no_grad()
    def forward_tree(self, feeds: Sequence[Sequence[int]], parents: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        """Row b feeds its last committed token (index 0, the root) then its tree's nodes, ``parents[b][i]`` the
        index of node i's parent (-1 for the root); each row's logits ``[len(feeds[b]), V]``."""
        self._check(feeds)
        if max(len(f) for f in feeds) > self.MAX_BUCKET:
            raise ValueError(f"a tree of more than {self.MAX_BUCKET} nodes per row does not fit one forward")
        return self._run(feeds, parents, False, True)

    def _check(self, feeds) -> None:
        if len(feeds) != self.rows:
            raise ValueError(f"{len(feeds)} feeds for a batch of {self.rows} rows")
        for b, f in enumerate(feeds):
            if self.lengths[b] + len(f) > self.capacity:
                raise ValueError(f"static KV cache of {self.capacity} positions is full (row {b}: {self.lengths[b]}"
                                 f" + {len(f)} tokens): raise the pair's max_context")

    def _run(self, feeds, parents, last_only: bool, logits: bool) -> list[torch.Tensor]:
        n = [len(f) for f in feeds]
        m = max(n)
        if m == 0:
            return [torch.empty(0, 0, device=self.device) for _ in feeds] if logits else []
        rows = self.rows
        mb = next((b for b in buckets_up_to(self._max_input) if b >= m), None) if self.engine == "compiled" else None
        rb = next((r for r, mm in sorted(self._graphs) if r >= rows and mm == mb), None) if mb else None
        if rb is None:
            mb, rb = m, rows          # no graph for this shape (a prefill, or the static engine): run it eagerly
        ids, pos, start, sees = self._views(self._staging.writable(), rb, mb)
        ids.fill_(self.pad_id)
        sees.zero_()
        sees.diagonal(dim1=1, dim2=2).fill_(1)       # padding sees itself (never an empty softmax)
        start.zero_()
        pos.zero_()                                 # padding rows: position 0
        lengths = torch.tensor(self.lengths, dtype=torch.long)                       # [rows]
        start[:rows] = lengths
        ids[:rows] = torch.tensor([list(f) + [self.pad_id] * (mb - len(f)) for f in feeds], dtype=torch.long)
        if parents is None:                         # chains: every row at once, no per-row host work
            sees[:rows] = torch.tril(torch.ones(mb, mb, dtype=torch.long))
            last = torch.tensor(n, dtype=torch.long)[:, None] - 1                    # padding: the last real position
            pos[:rows] = (lengths[:, None] + torch.minimum(torch.arange(mb), last)).clamp(min=0)
        else:                                       # trees: row b's mask and depths built in Python, copied once
            for b, par in enumerate(parents):
                depth, mask = [], [[0] * mb for _ in range(mb)]
                for i, p in enumerate(par):
                    depth.append(depth[p] + 1 if p >= 0 else 0)
                    j = i
                    while j >= 0:                    # a node sees itself and its ancestors
                        mask[i][j] = 1
                        j = par[j]
                for i in range(len(par), mb):        # padding sees itself (never an empty softmax)
                    mask[i][i] = 1
                sees[b] = torch.tensor(mask, dtype=torch.long)
                pad = [depth[-1] if depth else max(-1, -self.lengths[b])] * (mb - len(depth))    # last real position
                pos[b] = self.lengths[b] + torch.tensor(depth + pad, dtype=torch.long)
        used = rb * (3 * mb + 1 + mb * mb)
        self._staging.upload(self._inp, used)
        graph = self._graphs.get((rb, mb))
        if graph is not None:
            with device_context(self.device):
                graph[0].replay()
            out_logits, feats = graph[1]
        else:
            out_logits, feats = self._call(rb, mb, self._fn if (rb, mb) in self._graphs else self.model.forward)
        self._fed_start = list(self.lengths)
        if parents is None:                 # a tree's slots count once keep_fed says which stay
            for b, k in enumerate(n):
                self.lengths[b] += k
        if self.keep_features:
            self.features = [feats[b, :k] for b, k in enumerate(n)]
        if not logits:
            return []
        if last_only:
            return [out_logits[b, k - 1:k] if k else out_logits[b, :0] for b, k in enumerate(n)]
        return [out_logits[b, :k] for b, k in enumerate(n)]

    # ----------------------------------------------------------------------------------------------- bookkeeping
    def keep_fed(self, row: int, keep: Sequence[int], length: int) -> None:
        """After :meth:`forward_tree`: row ``row`` keeps the fed tokens at indices ``keep`` (root and accepted path,
        in order), moved to slots ``start + 0, 1, …``; it then holds positions ``0 … length − 1``."""
        start = self._fed_start[row]
        src = torch.tensor([start + i for i in keep], device=self.device)
        dst = torch.arange(start, start + len(keep), device=self.device)
        if not torch.equal(src, dst):
            for layer in self.cache.layers:
                layer.keys[row].index_copy_(1, dst, layer.keys[row].index_select(1, src))
                layer.values[row].index_copy_(1, dst, layer.values[row].index_select(1, src))
        self.lengths[row] = length

    def rollback(self, row: int, length: int) -> None:
        """Row ``row`` keeps positions ``0 … length − 1``."""
        self.lengths[row] = min(self.lengths[row], length)

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Only ``rows`` stay, renumbered 0 … len(rows) − 1 in order; their cache rows move to the front."""
        rows = list(rows)
        if rows != list(range(len(rows))):
            idx = torch.tensor(rows, dtype=torch.long, device=self.device)
            for layer in self.cache.layers:
                layer.keys[:len(rows)] = layer.keys.index_select(0, idx)
                layer.values[:len(rows)] = layer.values.index_select(0, idx)
        self.lengths = [self.lengths[r] for r in rows]
