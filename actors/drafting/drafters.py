"""Drafters propose tokens; the policy decides how many (see ``policies/base.py``).

Every drafter is batch-shaped (:class:`Drafter`): a single generation is a batch of one row.
``ModelDrafter`` runs any HF causal LM that shares the target's tokenizer, keeping
its own KV cache: each level feeds only what the draft has not seen yet, and
``rollback`` crops it to the accepted prefix, so accepted tokens are never
recomputed. ``NgramDrafter`` is model-free prompt lookup: it proposes the
continuation of the most recent earlier occurrence of the last n tokens of
prompt + output (longest n first, ``n_max`` down to ``n_min``); its q is a point
mass on each proposal.
"""
from __future__ import annotations

from typing import Sequence

import torch

from actors.core.acceptance import warp
from actors.runtime.kv import cached_length
from actors.runtime.row_runners import rows_runner
from actors.runtime.runners import EagerRunner, make_runner
from actors.core.tree_step import draft_tree, model_dists
from actors.runtime.kv import keep_positions
from policies.errors import SpecsweepError


class Drafter:
    """The drafter seam: everything the engine asks of a drafter, for a batch of rows (B = 1 included).

    ``reset(rows, sampling, generators, stop_ids, tree)`` starts a generation of ``rows`` rows: ``sampling``
    ``{"temperature", "top_p"}`` or None for greedy; ``generators[b]`` the ``torch.Generator`` row b's sampled
    drafts draw from (each row its own, so a row's drafts do not depend on the rows beside it); ``stop_ids``
    the EOS ids (a draft ends after one); ``tree`` whether this generation drafts trees (one row per drafter:
    a batch's other rows draft their trees on a :meth:`twin`).

    Chains, one draft forward per level for every row still drafting:

    * ``begin(seqs, caps)`` starts a step: ``seqs[b]`` is row b's committed tokens, ``caps[b]`` its cap;
    * ``next(active)`` drafts one more token for each row in ``active`` and returns, per row, the pick
      ``(x, q(x), max q, H(q), q_row)`` of :func:`pick_draft_token`, or None when the row has nothing to
      propose (n-gram without a match, a one-token prompt for an EAGLE head); the step asks the row's policy
      through :func:`record_proposal`;
    * ``rollback(row, valid)`` keeps row ``row``'s first ``valid`` committed tokens;
    * ``keep_rows(rows)`` drops finished rows (the rest renumbered in the given order).

    A drafter with ``needs_features`` (an EAGLE head) is handed the target's hidden states of every
    forward the engine runs through ``see_features(row, start, hidden)``: the entries ``feature_layers`` of
    transformers' ``output_hidden_states`` tuple, concatenated (default ``(-1,)``: the final hidden state;
    ``actors/runtime/hf_api.py::hidden_features``). Tree drafters (``supports_trees``)
    also give ``propose_tree(tokens, policy, max_depth)`` and ``keep_tree_path(committed, tree, path)`` for
    their one row. ``finished(tokens)`` hands over each finished response, after the batch's decoding (untimed);
    ``hold(on)`` stops a drafter with a memory of responses from learning them that way, ``remember(tokens)`` /
    ``forget(tokens)`` teach or unteach one explicitly (a sweep actor: ``actors/pair_actor.py``). ``deterministic``:
    proposals never depend on the sampling draws (q is a point mass; a tree's nodes are fixed before verification),
    so dynamic trees stay lossless under sampling. The engine reaches a drafter only through these methods.
    """

    name = "drafter"
    supports_trees = False
    needs_features = False
    deterministic = False
    feature_layers: tuple[int, ...] = (-1,)
    sampling: dict | None = None
    generators: list | None = None
    stop_ids: frozenset = frozenset()

    def reset(self, rows: int = 1, sampling: dict | None = None, generators=None,
              stop_ids: frozenset = frozenset(), tree: bool = False) -> None:
        """Start a generation of ``rows`` rows with these settings (class docstring); forgets any cached context."""
        self.sampling, self.generators, self.stop_ids = sampling, generators, frozenset(stop_ids)

    @property
    def generator(self) -> torch.Generator | None:
        """Row 0's generator (a tree drafter drafts one row)."""
        return self.generators[0] if self.generators else None

    def begin(self, seqs: Sequence[Sequence[int]], caps: Sequence[int]) -> None:
        """Start a chain step after each row's committed ``seqs[b]``."""
        raise NotImplementedError

    def next(self, active: Sequence[int]) -> dict:
        """One more draft token for each row in ``active``: its pick, or None."""
        raise NotImplementedError

    def rollback(self, row: int, valid: int) -> None:
        """Row ``row`` keeps only what was computed for its first ``valid`` committed tokens."""

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Drop every row not in ``rows``."""

    def see_features(self, row: int, start: int, hidden) -> None:
        """Row ``row``'s target hidden states [m, hidden] at positions start … start + m − 1 (``needs_features``)."""

    def use_engine(self, engine: str, capacity: int, inductor: bool | None) -> None:
        """Run one row on the target's engine kind (``actors/runtime/runners.py``); drafters without a model ignore it."""

    def prepare(self) -> None:
        """Compile/capture before anything is timed; a no-op for drafters without a model."""

    def finished(self, tokens: Sequence[int]) -> None:
        """A generation's response ``tokens`` (its new tokens) is done; a drafter with a memory of earlier
        responses (``suffix``) learns it unless held, the rest ignore it."""

    def hold(self, on: bool = True) -> None:
        """While held, :meth:`finished` teaches nothing (a drafter without a memory of responses ignores it)."""

    def remember(self, tokens: Sequence[int]) -> None:
        """Learn a response now, held or not (a drafter without a memory of responses ignores it)."""

    def forget(self, tokens: Sequence[int]) -> None:
        """Unlearn a response learnt before (nothing when it is not held; a drafter without a memory ignores it)."""

    def propose_tree(self, tokens: Sequence[int], policy, max_depth: int):
        """The :class:`~policies.base.TreePolicy`'s tree (``actors.core.tree_step.Tree``) after ``tokens``, at most
        ``max_depth`` levels."""
        raise SpecsweepError(f"tree policy {policy.name} needs a draft model (not {self.name})")

    def keep_tree_path(self, committed: int, tree, path: Sequence[int]) -> None:
        """After verification: keep the ``committed`` prefix and the accepted ``path`` (node indices) of ``tree``."""
        raise SpecsweepError(f"the {self.name} drafter does not draft trees")

    def twin(self) -> "Drafter":
        """A drafter with this one's weights and state of its own (a batch's per-row tree drafters)."""
        raise SpecsweepError(f"the {self.name} drafter does not draft trees")


def pick_draft_token(logits: torch.Tensor, sampling: dict | None, generator: torch.Generator | None):
    """Choose the draft token from ``logits`` [vocab] and read (x, q(x), max q, H(q)) with one host sync.

    Greedy: x = argmax, q = softmax(logits). Sampling: q = the warped distribution
    (temperature, top-p) and x ~ q. H(q) is the natural-log entropy. Returns
    ``(x, q(x), max q, H(q), q_row)``, ``q_row`` the distribution when sampled (None when greedy).
    """
    if sampling is None:
        probs = torch.softmax(logits.float(), -1)
        token = probs.argmax()
        q_row = None
    else:
        probs = warp(logits, sampling["temperature"], sampling["top_p"])
        token = torch.multinomial(probs, 1, generator=generator)[0]
        q_row = probs
    x, q_tok, q_max, ent = _stats(probs, token).tolist()
    return int(x), q_tok, q_max, ent, q_row


def _stats(probs: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
    """[x, q(x), max q, H(q)] as one float64 tensor on the device (H in nats)."""
    h = -(probs * torch.log(probs.clamp_min(1e-30))).sum()
    return torch.stack([token.double(), probs[token].double(), probs.max().double(), h.double()])


def token_stats(probs: torch.Tensor, token: int) -> tuple[float, float, float]:
    """(q(x), max q, H(q)) of distribution ``probs`` [vocab] for a given token, one host sync."""
    _, q_tok, q_max, ent = _stats(probs.float(), torch.tensor(token, device=probs.device)).tolist()
    return q_tok, q_max, ent


def readable_ids(model) -> int:
    """How many token ids ``model`` reads: its input embedding's rows, or the whole vocabulary of a reduced-vocabulary
    draft (``actors/loading/reduced_vocab.py`` maps every id itself)."""
    full = getattr(model, "full_vocab_size", None)
    return int(full) if full is not None else model.get_input_embeddings().num_embeddings


class ModelDrafter(Drafter):
    """A draft LM: each level feeds each drafting row what its cache lacks (the step's catch-up first, then one
    token), so accepted tokens are never recomputed.

    One row runs on a plain runner (``actors/runtime/runners.py``: eager, or the target's static/compiled engine); a batch
    of rows on the rows runner of the same engine (``actors/runtime/row_runners.py``: gap-masked eager or per-row static). Trees: a tree generation runs eagerly (tree
    steps edit a ``DynamicCache`` in place, ``actors/core/tree_step.py``); after verification only the committed prefix
    and the accepted path stay in the draft's cache.
    """

    name = "model"
    supports_trees = True

    def __init__(self, model, runner=None, pad_id: int = 0):
        self.model = model
        self.pad_id = int(pad_id)
        self.readable = readable_ids(model)
        self.runner = runner if runner is not None else EagerRunner(model)
        self._main = self.runner
        self._eager = self.runner if isinstance(self.runner, EagerRunner) else None
        self.engine, self._capacity, self.inductor = "eager", 4096, None    # the target's engine kind
        self._batch = None        # the rows runner (actors/runtime/row_runners.py), made the first time a batch of rows drafts
        self._rows = None         # the rows runner while B > 1, None for one row
        self.reset()

    def twin(self) -> "ModelDrafter":
        """The same draft model with a cache of its own (eager)."""
        return ModelDrafter(self.model, pad_id=self.pad_id)

    def use_engine(self, engine: str, capacity: int, inductor: bool | None) -> None:
        if engine != "eager" and isinstance(self._main, EagerRunner):
            self.runner = self._main = make_runner(self.model, engine, capacity, inductor)
            self.engine, self._capacity, self.inductor = self._main.engine, capacity, inductor

    def prepare(self) -> None:
        self._main.prepare(2)     # a step feeds the draft one token, or two after a fully accepted draft

    def reset(self, rows: int = 1, sampling=None, generators=None, stop_ids=frozenset(), tree: bool = False) -> None:
        super().reset(rows, sampling, generators, stop_ids, tree)
        if rows > 1:
            if self._batch is None:
                self._batch = rows_runner(self.model, self.engine, self._capacity, self.inductor, self.pad_id)
                self._batch.prepare(2)
            self._rows = self._batch
            self._rows.reset(rows)
            return
        self._rows = None
        if tree and self._eager is None:
            self._eager = EagerRunner(self.model)
        self.runner = self._eager if tree else self._main
        self.runner.reset()

    def begin(self, seqs, caps) -> None:
        self.seqs = [list(s) for s in seqs]

    def _readable(self, ids: list[int]) -> list[int]:
        """``ids`` with those the draft has no embedding for (a wider target emitted them) read as ``pad_id``: only
        the proposals after them change, and verification keeps the output the target's."""
        if not ids or max(ids) < self.readable:
            return ids
        return [t if t < self.readable else self.pad_id for t in ids]

    @torch.no_grad()
    def next(self, active) -> dict:
        if self._rows is None:                          # one row: the plain cache
            seq = self.seqs[0]
            logits = self.runner.forward(self._readable(seq[self.runner.length:]), last_only=True)[-1]
            pick = pick_draft_token(logits, self.sampling, self.generator)
            seq.append(pick[0])
            return {0: pick}
        act = set(active)
        runner = self._rows
        feeds = [self._readable(self.seqs[b][runner.lengths[b]:]) if b in act else [] for b in range(runner.rows)]
        logits = runner.forward(feeds, last_only=True)
        picks = {}
        for b in active:
            gen = self.generators[b] if self.generators is not None else None
            picks[b] = pick_draft_token(logits[b][-1], self.sampling, gen)
            self.seqs[b].append(picks[b][0])
        return picks

    def rollback(self, row: int, valid: int) -> None:
        if self._rows is None:
            self.runner.rollback(valid)
        else:
            self._rows.rollback(row, valid)

    def keep_rows(self, rows) -> None:
        if self._rows is not None:
            self._rows.keep_rows(rows)

    def propose_tree(self, tokens, policy, max_depth):
        """The policy's tree after the committed ``tokens`` (``actors.core.tree_step.draft_tree``)."""
        return draft_tree(model_dists(self.model, self.runner.cache, self._readable(list(tokens)), self.sampling),
                          policy, max_depth, self.sampling, self.generator, self.stop_ids)

    def keep_tree_path(self, committed, tree, path) -> None:
        """Keep the committed prefix and the accepted ``path`` (tree node indices) in the draft's cache."""
        cache = self.runner.cache
        d_len = cached_length(cache)      # the draft lags behind when it did not run this step
        slots = [tree.draft_slot[i] for i in path if i in tree.draft_slot] if d_len >= committed else []
        keep_positions(cache, list(range(min(committed, d_len))) + slots)


class LookupDrafter(Drafter):
    """A model-free drafter: each row's chain is looked up once per step (``row_continuation``), every token a point
    mass q = δ_x (its q(x), max q = 1, H = 0), so verification under sampling stays the target's distribution."""

    deterministic = True

    def row_continuation(self, row: int, tokens: Sequence[int], k: int) -> list[int]:
        """Up to ``k`` tokens proposed after row ``row``'s committed ``tokens``."""
        raise NotImplementedError

    def begin(self, seqs, caps) -> None:
        """Each drafting row's continuation of up to its cap tokens."""
        self.queue = [self.row_continuation(b, s, c) if c > 0 else [] for b, (s, c) in enumerate(zip(seqs, caps))]
        self.level = 0

    def next(self, active) -> dict:
        """The next token of each active row's continuation (None past its end); q is a point mass."""
        level, picks = self.level, {}
        for b in active:
            queue = self.queue[b]
            picks[b] = (queue[level], 1.0, 1.0, 0.0, None) if level < len(queue) else None
        self.level += 1
        return picks


class NgramDrafter(LookupDrafter):
    """Prompt lookup (Saxena 2023; transformers' ``prompt_lookup_num_tokens``)."""

    name = "ngram"

    def __init__(self, n_max: int = 3, n_min: int = 1):
        if not (1 <= n_min <= n_max):
            raise ValueError(f"ngram sizes need 1 <= n_min <= n_max, got n_min={n_min}, n_max={n_max}")
        self.n_max, self.n_min = n_max, n_min

    def continuation(self, tokens: Sequence[int], k: int) -> list[int]:
        """k tokens following the most recent earlier match of the longest suffix n-gram (none if no match)."""
        seq = list(tokens)
        L = len(seq)
        for n in range(min(self.n_max, L - 1), self.n_min - 1, -1):
            tail = seq[L - n:]
            for start in range(L - n - 1, -1, -1):     # most recent earlier occurrence first
                if seq[start:start + n] == tail:
                    # copy forward from the match; a copy that runs into the tail keeps copying
                    # its own output (as in LZ77), so a repeating pattern continues to k tokens
                    for j in range(start + n, start + n + k):
                        seq.append(seq[j])
                    return seq[L:]
        return []

    def row_continuation(self, row, tokens, k) -> list[int]:
        return self.continuation(tokens, k)
