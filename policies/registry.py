"""Policy names, their parameters, the initial γ and the generation settings: declared and checked once.

``build(spec, gamma)`` is the one way the CLI, the sweep and the tests make a
policy. Each parameter is declared once here with its type, default and valid
range, so bad input is refused with one line naming the value and what is valid.
``check_gamma`` and ``check_generation`` hold the bounds of the initial γ and of
``max_new_tokens``/``temperature``/``top_p``; the sweep config, the CLI, the replay
CLI and the engine all call them, so one bad value gets one message everywhere.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable

from policies.adaedl import AdaEDL
from policies.bandit import Bandit, parse_ints
from policies.base import Policy
from policies.batch import OLD_TETRIS, GTBatch, Tetris
from policies.batch_schedule import OLD_FORM, TRTLLM, VLLM, BatchSchedule, parse_trtllm, parse_vllm
from policies.dv_threshold import DVThreshold
from policies.ema_steps import EmaSteps
from policies.errors import SpecsweepError
from policies.fixed import Fixed, TargetOnly
from policies.gammatune import GammaTune, GammaTunePlus
from policies.goodput import Goodput
from policies.gt import GT
from policies.heuristic import HFHeuristic
from policies.oracle import Oracle
from policies.svip import SVIP
from policies.threshold import Threshold
from policies.trees import Eagle2, GTDynamic, GTStatic, Sequoia, parse_accept


@dataclass(frozen=True)
class Param:
    """One policy parameter: its type, default, validity check and the rule quoted when a value fails it."""

    kind: type
    default: Any
    valid: Callable[[Any], bool] = lambda v: True
    rule: str = ""


def _prob(v):
    return 0.0 <= v <= 1.0


TAU = Param(float, 0.4, _prob, "in [0, 1]")
ADAPTIVE = Param(bool, False)
GT_TUNE = {"eta": Param(float, 0.3, lambda v: 0 < v <= 1, "in (0, 1]"),
           "delta": Param(float, 2.0, lambda v: v >= 0, ">= 0"),
           "gamma_min": Param(int, 1, lambda v: v >= 1, ">= 1"),
           "gamma_max": Param(int, 10, lambda v: v >= 1, ">= 1"),
           "expand": Param(str, "ema", lambda v: v in ("ema", "jump"), "ema or jump")}

GT_C = Param(str, "auto", lambda v: v in ("auto", "params") or 0 < float(v) < 1,
             "auto (measured, Φ priced), params (draft/target parameters, Φ priced) or a number in (0, 1)")
CAP = lambda default: Param(int, default, lambda v: v >= 1, ">= 1")  # noqa: E731
ADAPT = {"target": Param(float, 0.9, _prob, "in [0, 1]"),
         "beta1": Param(float, 0.5, lambda v: 0 <= v < 1, "in [0, 1)"),
         "beta2": Param(float, 0.9, lambda v: 0 <= v < 1, "in [0, 1)"),
         "eps": Param(float, 0.01, lambda v: v >= 0, ">= 0")}

# Sequoia's dynamic program (policies/tree_shapes.py) costs depth · ranks · budget² additions: within these bounds
# under 10 s on one core (budget 3000 took over 40 s; depth 600 overflowed the stack of the recursive form it replaced).
SEQUOIA_BUDGET = 1024
SEQUOIA_DEPTH = 64
SEQUOIA_RANKS = 16         # accept=: at most this many per-rank probabilities (a measured vector has 8)
# the grown trees (eagle2, gt-dynamic, gt-static): each level drafts topk² candidates and the verify forward reads every
# node kept, so a depth, a top-k or a node count past these is a typo, not a tree to measure
TREE_DEPTH, TREE_TOPK, TREE_NODES = 64, 64, 1024
DEPTH = Param(int, 16, lambda v: 1 <= v <= TREE_DEPTH, f">= 1 and <= {TREE_DEPTH}")
TOPK = Param(int, 10, lambda v: 1 <= v <= TREE_TOPK, f">= 1 and <= {TREE_TOPK}")
NODES = Param(int, 60, lambda v: 1 <= v <= TREE_NODES, f">= 1 and <= {TREE_NODES}")


def _sequoia_accept(v: str) -> bool:
    """sequoia's ``accept=``: auto, or 1 to SEQUOIA_RANKS per-rank probabilities (``parse_accept``'s rules)."""
    return v == "auto" or 0 < len(parse_accept(v) or []) <= SEQUOIA_RANKS


REGISTRY: dict[str, tuple[type, dict[str, Param], str]] = {
    "ar": (TargetOnly, {}, "target alone, one token per forward (baseline)"),
    "fixed": (Fixed, {}, "draft the initial γ every step (SpecDecode)"),
    "hf-heuristic": (HFHeuristic, {"persist": Param(bool, False)}, "γ += 2 if all accepted else γ − 1 (transformers)"),
    "threshold": (Threshold, {"tau": TAU, "adaptive": ADAPTIVE}, "stop after a draft with q < τ (AssistantThreshold)"),
    "gammatune": (GammaTune, GT_TUNE, "EMA of accepted counts with expansion δ (GammaTune Alg. 1)"),
    "gammatune+": (GammaTunePlus, {**GT_TUNE, "tau": TAU, "adaptive": ADAPTIVE,
                                   "stop_on": Param(str, "max", lambda v: v in ("max", "token"), "max or token")},
                   "GammaTune + stop when the draft's top probability < τ (stop_on=token: q(x_i) < τ)"),
    "gt": (GT, {"c": GT_C,
                "eps": Param(float, 0.0, lambda v: 0 <= v < 1, "in [0, 1)"),
                "cap": Param(int, 32, lambda v: v >= 1, ">= 1"),
                "ahead": Param(float, 0.0, _prob, "in [0, 1] (0 = off)")},
           "draft while Π q > the token's price c + ΔΦ/M_T − ε, Φ = 0 below the knee (GT Eq. 5 with Eq. 2, 18); "
           "ahead=q̂ > 0: stop before a token that could not pass with q = q̂"),
    "oracle": (Oracle, {"cap": Param(int, 64, lambda v: v >= 1, ">= 1")}, "drafts exactly what will be accepted (greedy)"),
    "goodput": (Goodput, {"cap": Param(int, 16, lambda v: v >= 1, ">= 1"),
                          "decay": Param(float, 0.95, lambda v: 0 < v <= 1, "in (0, 1]"),
                          "prior": Param(float, 2.0, lambda v: v >= 0, ">= 0"),
                          "tau": Param(float, 0.0, _prob, "in [0, 1]")},
                "k maximising expected tokens per second from online acceptance estimates"),
    "sequoia": (Sequoia, {"budget": Param(int, 64, lambda v: 1 <= v <= SEQUOIA_BUDGET, f">= 1 and <= {SEQUOIA_BUDGET}"),
                          "depth": Param(int, 8, lambda v: 1 <= v <= SEQUOIA_DEPTH, f">= 1 and <= {SEQUOIA_DEPTH}"),
                          "accept": Param(str, "auto", _sequoia_accept,
                                          f"auto or up to {SEQUOIA_RANKS} probabilities like 0.8/0.3")},
                "static tree by Sequoia's DP under a node budget (tree)"),
    "gt-static": (GTStatic, {"c": GT_C,
                             "eps": Param(float, 0.0, lambda v: 0 <= v < 1, "in [0, 1)"),
                             "accept": Param(str, "auto", lambda v: parse_accept(v) is not None or v == "auto",
                                             "auto or probabilities like 0.8/0.3"),
                             "max_depth": DEPTH},
                  "static tree of every node with α̂ > c + its Φ share (GT Eq. 6, 9–11) (tree)"),
    "eagle2": (Eagle2, {"depth": replace(DEPTH, default=5), "topk": TOPK, "n": NODES},
               "dynamic tree: top-k expansion per depth, keep the top N (EAGLE-2) (tree)"),
    "gt-dynamic": (GTDynamic, {"c": GT_C,
                               "eps": Param(float, 0.0, lambda v: 0 <= v < 1, "in [0, 1)"),
                               "topk": TOPK, "n_max": NODES, "max_depth": DEPTH},
                   "dynamic tree, depth while best α̂ > c + its Φ share, N = min(D·B, N_max) (GT Eq. 6, 12–13) (tree)"),
    "svip": (SVIP, {"c": Param(float, 0.15, lambda v: v > 0, "> 0"), "h": Param(float, 0.3, lambda v: v >= 0, ">= 0"),
                    "cap": CAP(40)},
             "stop after a draft with √(c·H(q)) > h, H in nats (SVIP)"),
    "adaedl": (AdaEDL, {"gamma_e": Param(float, 0.2, lambda v: v > 0, "> 0"), "lam": Param(float, 0.7, _prob, "in [0, 1]"),
                        "cap": CAP(8), "adaptive": Param(bool, True), **ADAPT},
               "drop the draft whose bound 1 − √(γe·H(q)) < λ; λ tuned online to acceptance (AdaEDL)"),
    "dv-threshold": (DVThreshold, {"theta": Param(float, 0.8, _prob, "in [0, 1]"), "target": ADAPT["target"], "cap": CAP(8),
                                   "adaptive": Param(bool, True), "beta1": ADAPT["beta1"], "beta2": ADAPT["beta2"],
                                   "eps": ADAPT["eps"]},
                     "stop after a draft with max q < θ; θ tuned online to acceptance (Draft & Verify)"),
    "bandit": (Bandit, {"arms": Param(str, "1/2/3/4/6/8", lambda v: parse_ints(v, 1) is not None,
                                      "draft lengths >= 1 like 1/2/4"),
                        "c": Param(float, 2.0, lambda v: v >= 0, ">= 0"),
                        "explore": Param(str, "ucb1", lambda v: v in ("ucb1", "shared"), "ucb1 or shared"),
                        "reward": Param(str, "model", lambda v: v in ("model", "clock"), "model or clock")},
               "UCB over draft lengths, reward = tokens/s of the step (BanditSpec UCBSpec)"),
    "ema-steps": (EmaSteps, {"candidates": Param(str, "1/3/5/7", lambda v: parse_ints(v, 0) is not None,
                                                 "draft lengths >= 0 like 1/3/5/7"),
                             "alpha": Param(float, 0.2, lambda v: 0 < v <= 1, "in (0, 1]"),
                             "interval": Param(int, 5, lambda v: v >= 1, ">= 1"),
                             "warmup": Param(int, 10, lambda v: v >= 0, ">= 0"),
                             "up_hysteresis": Param(float, 0.0), "down_hysteresis": Param(float, -0.25),
                             "ceiling_coeff": Param(float, 0.0, lambda v: v >= 0, ">= 0"),
                             "persist": Param(bool, False)},
                  "EMA of accepted drafts, step up/down a candidate list with hysteresis (SGLang adaptive steps)"),
    "batch-schedule": (BatchSchedule, {TRTLLM: Param(str, "", lambda v: v == "" or parse_trtllm(v) is not None,
                                                     "batch size:draft length pairs like 4:4/8:2/32:1"),
                                       VLLM: Param(str, "", lambda v: v == "" or parse_vllm(v) is not None,
                                                   "inclusive ranges start-end:K like 1-4:4/5-32:2, from 1, disjoint"),
                                       "disable_by_batch_size": Param(int, 0, lambda v: v >= 0, ">= 0 (0 = not set)")},
                       "γ by the batch size: TensorRT-LLM draft_len_schedule (a value up to its key, 0 past the last; "
                       "default 3:4/15:3/32:2) or vLLM num_speculative_tokens_per_batch_size ranges + "
                       "disable_by_batch_size (batch)"),
    "tetris": (Tetris, {"base": Param(int, 0, lambda v: v >= 0, ">= 0 (0 = the initial γ)"),
                        "extra": Param(int, 2, lambda v: v >= 0, ">= 0")},
               "each row drafts base + extra, the batch verifies the base·B drafts with the highest Π q; plain base "
               "below 2 rows; greedy only (Tetris) (batch)"),
    "gt-batch": (GTBatch, {"c": GT_C, "cap": CAP(16),
                           "rule": Param(str, "mean", lambda v: v in ("mean", "row"), "mean or row")},
                 "ours (the GT paper has no batch equation): verify level L while Σ α̂ / B (rule=mean) or each row's "
                 "α̂ (rule=row) beats its price (T_d + ΔΦ_B) / (T_B(1) + o) in plain batch steps (batch)"),
}


MAX_GAMMA = 1024
MAX_NEW_TOKENS = 65536
MIN_TEMPERATURE = 1e-4
GENERATION: dict[str, Param] = {
    "max_new_tokens": Param(int, 128, lambda v: 1 <= v <= MAX_NEW_TOKENS, f"an integer >= 1 and <= {MAX_NEW_TOKENS}"),
    # a positive T below MIN_TEMPERATURE overflows logits / T in float32 (NaN probabilities): it is greedy in effect
    "temperature": Param(float, 0.0, lambda v: math.isfinite(v) and (v == 0 or MIN_TEMPERATURE <= v <= 100),
                         "0 (greedy) or a number >= 0.0001 and <= 100"),
    "top_p": Param(float, 1.0, lambda v: math.isfinite(v) and 0 < v <= 1, "a number in (0, 1]"),
}


SEED_MAX = 2 ** 32 - 1     # every seed (config, CLI, distillation) lies in [0, SEED_MAX]: numpy's range, within torch's


def check_seed(seed: Any, label: str = "seed") -> int:
    """``seed`` when it is an integer in [0, SEED_MAX]; one line naming the range otherwise."""
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= SEED_MAX:
        raise SpecsweepError(f"{label} must be an integer >= 0 and <= {SEED_MAX}, got {seed!r}")
    return seed


def check_gamma(gamma: Any, label: str = "initial gamma") -> int:
    """``gamma`` if it is an integer in [1, MAX_GAMMA]; else one line naming ``label`` and the valid range."""
    if isinstance(gamma, bool) or not isinstance(gamma, int) or not 1 <= gamma <= MAX_GAMMA:
        raise SpecsweepError(f"{label} must be an integer >= 1 and <= {MAX_GAMMA}, got {gamma!r}")
    return gamma


def check_generation(settings: dict, label: Callable[[str], str] = str) -> dict:
    """``settings`` (any of max_new_tokens, temperature, top_p) with defaults filled in, each within its bounds.

    ``label(key)`` names a value in the message: ``--top-p`` on the CLI, ``generation.top_p`` in a config."""
    unknown = sorted(set(settings) - set(GENERATION))
    if unknown:
        raise SpecsweepError(f"{label(unknown[0])} unknown setting; valid settings: {', '.join(GENERATION)}")
    out = {}
    for key, p in GENERATION.items():
        v = settings.get(key, p.default)
        numeric = isinstance(v, (int, float)) and not isinstance(v, bool) and (p.kind is float or isinstance(v, int))
        if not numeric or not p.valid(v):
            raise SpecsweepError(f"{label(key)} must be {p.rule}, got {v!r}")
        out[key] = v
    return out


def names() -> list[str]:
    """Every registered policy name, in registry order."""
    return list(REGISTRY)


def convert_value(policy: str, key: str, p: Param, raw: Any) -> Any:
    """``raw`` as parameter ``key``'s type when valid: integers are whole finite numbers (no inf, nan or 1.5),
    floats finite; one line naming the parameter and its rule otherwise."""
    try:
        if p.kind is bool:
            if isinstance(raw, bool):
                value = raw
            elif str(raw).lower() in ("true", "1", "yes", "on"):
                value = True
            elif str(raw).lower() in ("false", "0", "no", "off"):
                value = False
            else:
                raise ValueError
        elif p.kind is int:
            number = float(raw)
            if isinstance(raw, bool) or not math.isfinite(number) or number != int(number):
                raise ValueError          # inf, nan, 1.5, true: not an integer (int(inf) would overflow)
            value = int(number) if not isinstance(raw, int) else raw
        elif p.kind is float:
            value = float(raw)
            if isinstance(raw, bool) or not math.isfinite(value):
                raise ValueError          # every number parameter is finite
        else:
            value = str(raw)
        ok, why = p.valid(value), "is out of range"
    except (TypeError, ValueError, OverflowError):
        ok, why = False, {bool: "is not true/false", int: "is not an integer",
                          float: "is not a finite number"}.get(p.kind, "is not valid")
        value = raw
    if not ok:
        rule = {bool: "true/false", int: f"an integer {p.rule}".strip(),
                float: p.rule or "a finite number"}.get(p.kind, p.rule or p.kind.__name__)
        raise SpecsweepError(f"{policy}: {key}={str(raw)[:40]!r} {why}: must be {rule}")
    return value


def parse(spec: str) -> tuple[str, dict[str, str]]:
    """``"gammatune:eta=0.5,delta=2"`` → ("gammatune", {"eta": "0.5", "delta": "2"})."""
    name, _, rest = str(spec).strip().partition(":")
    params: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise SpecsweepError(f"policy parameter {item!r} in {spec!r} is not key=value")
        key = key.strip().replace("-", "_")
        if key in params:
            raise SpecsweepError(f"policy parameter {key!r} is given twice in {spec!r}: give each parameter once")
        params[key] = value.strip()
    return name, params


def resolve(name: str, params: dict | None = None) -> tuple[str, dict]:
    """Validated full parameter set (defaults filled in) for ``name``."""
    if name not in REGISTRY:
        raise SpecsweepError(f"unknown policy {name!r}: valid policies are {', '.join(REGISTRY)}")
    _, spec, _ = REGISTRY[name]
    params = dict(params or {})
    if name == "batch-schedule" and {"schedule", "off_above"} & set(params):
        raise SpecsweepError(OLD_FORM)
    if name == "tetris" and "per_row" in params:
        raise SpecsweepError(OLD_TETRIS)
    unknown = sorted(set(params) - set(spec))
    if unknown:
        valid = ", ".join(spec) or "none"
        raise SpecsweepError(f"{name}: unknown parameter {unknown[0]!r}; valid parameters: {valid}")
    out = {k: convert_value(name, k, p, params[k]) if k in params else p.default for k, p in spec.items()}
    if name.startswith("gammatune") and out["gamma_min"] > out["gamma_max"]:
        raise SpecsweepError(f"{name}: gamma_min={out['gamma_min']} exceeds gamma_max={out['gamma_max']}")
    return name, out


def build(spec: str | tuple[str, dict], gamma: int = 4) -> Policy:
    """A policy instance for ``spec`` (a CLI string or a (name, params) pair) and initial γ."""
    name, params = parse(spec) if isinstance(spec, str) else spec
    name, params = resolve(name, params)
    if name != "ar":
        check_gamma(gamma)
    cls, _, _ = REGISTRY[name]
    return cls(gamma, **params)
