"""``hf-heuristic`` — transformers' "heuristic" schedule (Mamou et al. 2024).

After each step: if n = γ (as many accepted as the step's cap k_max, transformers'
``num_matches == num_assistant_tokens``) then γ += 2, else γ = max(1, γ − 1); a draft
the engine cut short near ``max_new_tokens`` therefore never grows γ. γ restarts at the initial value each generation
("heuristic_transient"); ``persist=true`` carries it across the generations an
actor serves (transformers' "heuristic").
"""
from __future__ import annotations

from policies.base import GenerationContext, SequencePolicy, Step


class HFHeuristic(SequencePolicy):
    """transformers' "heuristic" assisted-generation schedule (as in Mamou et al. 2024, "Dynamic Speculation Lookahead
    Accelerates Speculative Decoding of Large Language Models"): γ += 2 after a step that accepted k_max drafts, else
    γ = max(1, γ − 1); γ restarts each generation unless ``persist``."""

    name = "hf-heuristic"

    def __init__(self, gamma: int, persist: bool = False):
        self.initial = gamma
        self.persist = persist
        self.gamma = gamma

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        if not self.persist:
            self.gamma = self.initial

    def max_draft(self) -> int:
        return self.gamma

    def update(self, o: Step) -> None:
        if o.drafted == 0:
            return
        self.gamma = self.gamma + 2 if o.accepted == o.k_max else max(1, self.gamma - 1)

    def params(self) -> dict:
        return {"persist": self.persist}
