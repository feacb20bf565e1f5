"""The ``eagle3`` drafter: an EAGLE-3 head (``actors/drafting/eagle3_head.py``) behind the drafter seam.

Everything but three things is ``actors/drafting/eagle_drafter.py``'s :class:`~actors.drafting.eagle_drafter.EagleDrafter` (catch-up
on the target's true features, drafting on the head's own outputs, the head's KV cache, trees, batches through
``actors/drafting/batch_eagle.py``); the rule of each difference (Li et al. 2025, "EAGLE-3: Scaling up Inference Acceleration
of Large Language Models via Training-Time Test", §3.2–3.3):

* **features**: the target's hidden states at the head's auxiliary layers, concatenated ([l; m; h], width 3·H_t),
  come through the runners' ``feature_layers`` seam (``actors/runtime/hf_api.py::hidden_features``) from the forwards the
  engine runs anyway — no extra target forward. ``feature_layers`` are the head's layer ids L, which index
  transformers' ``output_hidden_states`` tuple directly (entry L = the hidden state entering decoder layer L);
* **later steps** feed the head's own output o (before ``norm`` and ``lm_head``, H wide) in place of a target feature;
  the head fuses a target feature with ``fc`` and passes its own output through (training-time test);
* **vocabulary**: draft logits are ``lm_head(norm(o))`` over the draft vocabulary, scattered to target ids
  d + d2t[d] with −inf elsewhere, so q is a full-vocabulary distribution that is zero outside the draft
  vocabulary and the acceptance rule over the target's vocabulary keeps the output exactly the target's.
"""
from __future__ import annotations

from actors.drafting.eagle3_head import load_eagle3_head
from actors.drafting.eagle_drafter import EagleDrafter


class Eagle3Drafter(EagleDrafter):
    """Drafts with an EAGLE-3 head (module docstring). ``kept`` is ignored: the head's d2t is its vocabulary."""

    name = "eagle3"

    def __init__(self, head, target, kept: list[int] | None = None):
        self.feature_layers = tuple(head.layers)
        super().__init__(head, target, None)

    @classmethod
    def from_folder(cls, folder, target) -> "Eagle3Drafter":
        return cls(load_eagle3_head(folder, target), target)

    def _drafting_head(self, lm, kept):
        """The head's own LM head over its draft vocabulary, after its final norm; rows at target ids d + d2t[d]."""
        return self.head.target_ids(), self.head.lm_head.weight.detach(), self.head.norm

    def _feature_width(self) -> int:
        """The concatenated auxiliary layers: len(layers) · the target's hidden size."""
        return self.head.fused_width
