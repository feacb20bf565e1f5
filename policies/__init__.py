"""Speculation policies: how many tokens to draft each step. Numbers in, decisions out."""
from policies.base import (DISCARD, MORE, STOP, GenerationContext, Policy, SequencePolicy, Step, TreePolicy,
                           Verdict)
from policies.registry import REGISTRY, build, names, parse, resolve

__all__ = ["Policy", "SequencePolicy", "TreePolicy", "Step", "Verdict", "GenerationContext", "MORE", "STOP",
           "DISCARD", "REGISTRY", "build", "names", "parse", "resolve"]
