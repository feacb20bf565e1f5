"""Sweep configs: YAML → validated :class:`SweepConfig`, every error naming its field path.

Everything is checked before Ray starts or a model loads: field names and types,
policy names and parameters (``policies/registry.py``), γ values, dataset filters.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from actors.models import DTYPES, QUANTIZATIONS
from jobs.templates import TEMPLATES
from policies.errors import SpecsweepError
from policies.registry import resolve

PAPER_GAMMAS = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24]


@dataclass
class PairEntry:
    target: str
    draft: str | None = "smollm2-135m-draft"
    name: str = ""
    dtype: str = "float32"
    device: str = "auto"
    quantization: str | None = None
    draft_quantization: str | None = None
    num_gpus: float = 0
    num_cpus: float = 1
    actors: int = 1
    template: str | None = None
    trust_remote_code: bool = False

    @property
    def label(self) -> str:
        return self.name or f"{self.target.split('/')[-1]}+{(self.draft or 'none').split('/')[-1]}"


@dataclass
class SweepConfig:
    name: str
    pairs: list[PairEntry]
    policies: list[tuple[str, dict]]
    gammas: list[int] = field(default_factory=lambda: list(PAPER_GAMMAS))
    dataset: dict = field(default_factory=lambda: {"source": "sample"})
    generation: dict = field(default_factory=lambda: {"max_new_tokens": 128, "temperature": 0.0, "top_p": 1.0})
    repeats: int = 1
    seed: int = 0
    warmup: int = 3
    output: str = "runs/sweep"
    tracking_uri: str = "sqlite:///mlflow.db"
    experiment: str = ""
    block_size: int = 0
    calibrate: dict = field(default_factory=lambda: {"context": 256, "max_tokens": 64})

    def fingerprint(self) -> str:
        """Identity of what the sweep computes (output/tracking locations excluded)."""
        d = asdict(self)
        for k in ("output", "tracking_uri", "experiment"):
            d.pop(k)
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]

    @property
    def experiment_name(self) -> str:
        return self.experiment or self.name


def _err(path: str, msg: str):
    raise SpecsweepError(f"config {path}: {msg}")


def _typed(path, value, kind, *, allow_none=False):
    if value is None and allow_none:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        _err(path, f"expected {kind.__name__}, got {value!r}")
    return value


def _keys(path, d, allowed):
    if not isinstance(d, dict):
        _err(path, f"expected a mapping, got {type(d).__name__}")
    unknown = sorted(set(d) - set(allowed))
    if unknown:
        _err(f"{path}.{unknown[0]}" if path else unknown[0], f"unknown field; valid fields: {', '.join(allowed)}")


def _policy(path, entry) -> tuple[str, dict]:
    if isinstance(entry, str):
        from policies.registry import parse

        name, params = parse(entry)
    elif isinstance(entry, dict) and "name" in entry:
        _keys(path, entry, ["name", "params"])
        name, params = entry["name"], entry.get("params") or {}
    elif isinstance(entry, dict) and len(entry) == 1:
        name, params = next(iter(entry.items()))
        params = params or {}
    else:
        _err(path, "expected a policy name, {name: {param: value}} or {name: ..., params: {...}}")
    if not isinstance(params, dict):
        _err(path, f"parameters of {name} must be a mapping")
    try:
        return resolve(name, params)
    except SpecsweepError as e:
        _err(path, str(e))


def parse_config(raw: dict, source: str = "config") -> SweepConfig:
    top = ["name", "pairs", "policies", "gammas", "dataset", "generation", "repeats", "seed", "warmup", "output",
           "tracking_uri", "experiment", "block_size", "calibrate"]
    _keys("", raw, top)
    if "name" not in raw or not str(raw["name"]).strip():
        _err("name", "missing: give the sweep a name (it is the MLflow experiment)")
    if not raw.get("pairs"):
        _err("pairs", "missing or empty: list at least one target/draft pair")
    pairs = []
    pfields = list(PairEntry.__dataclass_fields__)
    for i, p in enumerate(raw["pairs"]):
        path = f"pairs[{i}]"
        _keys(path, p, pfields)
        if "target" not in p:
            _err(f"{path}.target", "missing")
        e = PairEntry(**p)
        if e.dtype not in DTYPES:
            _err(f"{path}.dtype", f"{e.dtype!r} is not valid; use {', '.join(DTYPES)}")
        for q in ("quantization", "draft_quantization"):
            if getattr(e, q) not in (None, *QUANTIZATIONS):
                _err(f"{path}.{q}", f"{getattr(e, q)!r} is not valid; use {', '.join(QUANTIZATIONS)} or null")
        if e.template not in (None, *TEMPLATES):
            _err(f"{path}.template", f"{e.template!r} is not valid; use {', '.join(TEMPLATES)} or null")
        _typed(f"{path}.num_gpus", e.num_gpus, float)
        if e.num_gpus < 0 or e.num_cpus < 0:
            _err(f"{path}.num_gpus", "must be >= 0")
        if not isinstance(e.actors, int) or e.actors < 1:
            _err(f"{path}.actors", f"must be an integer >= 1, got {e.actors!r}")
        pairs.append(e)
    labels = [p.label for p in pairs]
    if len(set(labels)) != len(labels):
        _err("pairs", f"two pairs share the label {labels!r}; give them distinct names")
    if not raw.get("policies"):
        _err("policies", "missing or empty: list at least one policy (see `specsweep policies`)")
    policies = [_policy(f"policies[{i}]", p) for i, p in enumerate(raw["policies"])]
    policies = [p for p in policies if p[0] != "ar"]  # ar runs in every task anyway
    gammas = raw.get("gammas", list(PAPER_GAMMAS))
    if not isinstance(gammas, list) or not gammas:
        _err("gammas", "expected a non-empty list of integers >= 1")
    for i, g in enumerate(gammas):
        if isinstance(g, bool) or not isinstance(g, int) or g < 1:
            _err(f"gammas[{i}]", f"must be an integer >= 1, got {g!r}")
    ds = raw.get("dataset", {"source": "sample"})
    _keys("dataset", ds, ["source", "categories", "limit_per_category", "question_ids"])
    gen = {"max_new_tokens": 128, "temperature": 0.0, "top_p": 1.0, **(raw.get("generation") or {})}
    _keys("generation", gen, ["max_new_tokens", "temperature", "top_p"])
    if not isinstance(gen["max_new_tokens"], int) or gen["max_new_tokens"] < 1:
        _err("generation.max_new_tokens", f"must be an integer >= 1, got {gen['max_new_tokens']!r}")
    if not isinstance(gen["temperature"], (int, float)) or gen["temperature"] < 0:
        _err("generation.temperature", f"must be >= 0 (0 = greedy), got {gen['temperature']!r}")
    if not isinstance(gen["top_p"], (int, float)) or not (0 < gen["top_p"] <= 1):
        _err("generation.top_p", f"must be in (0, 1], got {gen['top_p']!r}")
    if gen["temperature"] > 0 and any(p[0] == "oracle" for p in policies):
        _err("policies", "oracle is defined for greedy decoding only; set generation.temperature: 0 or drop it")
    cfg = SweepConfig(name=str(raw["name"]), pairs=pairs, policies=policies, gammas=gammas, dataset=ds, generation=gen)
    for k, kind in (("repeats", int), ("seed", int), ("warmup", int), ("block_size", int)):
        if k in raw:
            setattr(cfg, k, _typed(k, raw[k], kind))
    if cfg.repeats < 1:
        _err("repeats", f"must be >= 1, got {cfg.repeats}")
    if cfg.warmup < 0 or cfg.block_size < 0:
        _err("warmup" if cfg.warmup < 0 else "block_size", "must be >= 0")
    for k in ("output", "tracking_uri", "experiment"):
        if k in raw:
            setattr(cfg, k, str(_typed(k, raw[k], str)))
    if "calibrate" in raw:
        _keys("calibrate", raw["calibrate"], ["context", "max_tokens", "repeats"])
        cfg.calibrate = {**cfg.calibrate, **raw["calibrate"]}
    return cfg


def load_config(path: str) -> SweepConfig:
    p = Path(path)
    if not p.exists():
        raise SpecsweepError(f"config file {path} does not exist")
    try:
        raw = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise SpecsweepError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(raw, dict):
        raise SpecsweepError(f"{path}: expected a YAML mapping at the top level")
    return parse_config(raw, path)
