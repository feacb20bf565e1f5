"""Sweep configs: YAML → validated :class:`SweepConfig`, every error naming its field path.

Everything is checked before Ray starts or a model loads, by one strict schema
(pydantic models with ``strict=True`` and ``extra="forbid"``):

* field names: an unknown field is refused with the list of valid ones;
* types: no coercion. Booleans only as YAML booleans (``true``/``false``; a
  quoted ``"false"`` is a string and is refused), integers only as integers,
  lists only as lists (``question_ids: "9017"`` is refused, not read as digits);
* numbers are finite (``.nan``/``.inf`` refused) and within their range;
* no duplicates: a γ, a policy (same name and resolved parameters), a question id,
  a category, a pair label or a YAML key listed twice is refused;
* policy names and parameters, the γ bounds and the generation settings come
  from ``policies/registry.py`` (the CLI and the engine check through it too);
* ``generation.temperature`` may be a list: one config per temperature, each into its own folder
  (``jobs/config/lists.py``), every one checked before the first runs.

A problem is reported as one line, ``config PATH: what is wrong; what is valid``.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from actors.drafter_kinds.registry import kind_name, kind_of
from actors.loading.model_files import clip
from actors.loading.models import DTYPES, QUANT_BACKENDS, QUANTIZATIONS
from actors.runtime.runners import ENGINES
from actors.loading.templates import TEMPLATES
from jobs.config.text import check_config_texts
from jobs.dataset import CATEGORIES, SAMPLE_EXTRA
from jobs.dataset_identity import file_selection_digest
from jobs.redact import redact
from jobs.yaml_reader import read_yaml_mapping
from policies.errors import SpecsweepError
from policies.registry import MAX_GAMMA, REGISTRY, SEED_MAX, check_gamma, check_generation, parse, resolve

PAPER_GAMMAS = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24]
DEVICE_RE = re.compile(r"^(auto|cpu|cuda|cuda:\d+)$")
TRACKING_SCHEMES = ("sqlite", "http", "https", "file", "postgresql", "mysql", "mssql", "databricks")


# ---------------------------------------------------------------------------------------------- schema

_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
NonEmpty = Field(min_length=1, pattern=r"\S")
Number = Union[int, float]     # a YAML 1 stays 1 and 1.0 stays 1.0: the fingerprint sees what was written


MAX_BATCH = 256


class PairEntry(BaseModel):
    """One target/draft pair and how its actors are placed and run."""

    model_config = _STRICT
    target: str = NonEmpty
    draft: Optional[str] = Field("smollm2-135m-draft", min_length=1, pattern=r"\S")
    name: str = ""
    dtype: Literal[tuple(DTYPES)] = "float32"  # type: ignore[valid-type]
    device: str = Field("auto", pattern=DEVICE_RE.pattern)
    quantization: Optional[Literal[QUANTIZATIONS]] = None  # type: ignore[valid-type]
    draft_quantization: Optional[Literal[QUANTIZATIONS]] = None  # type: ignore[valid-type]
    num_gpus: int = Field(0, ge=0, le=64)       # whole GPUs; >= 1 with device cuda (see parse_config)
    num_cpus: Number = Field(1, ge=0, le=1024)
    actors: int = Field(1, ge=1, le=1024)
    template: Optional[Literal[TEMPLATES]] = None  # type: ignore[valid-type]
    trust_remote_code: bool = False
    engine: Optional[Literal[ENGINES]] = None   # type: ignore[valid-type]  # eager | static | compiled (None: compiled on CUDA, eager on CPU)
    inductor: Optional[bool] = None             # torch.compile before CUDA-graph capture
    quant_backend: Literal[QUANT_BACKENDS] = "torchao"  # type: ignore[valid-type]
    max_context: int = Field(2048, ge=16, le=1_000_000)   # static KV cache positions (prompt + generation)

    @property
    def label(self) -> str:
        return self.name or f"{self.target.split('/')[-1]}+{(self.draft or 'none').rstrip('/').split('/')[-1]}"

    @property
    def drafter_kind(self) -> str:
        """The name of the draft's kind, ``none`` without one (``actors/drafter_kinds/registry.py``)."""
        return kind_name(self.draft)


ENGINE_DEFAULTS = {"engine": None, "inductor": None, "quant_backend": "torchao", "max_context": 2048}
# policy parameters added after sweeps were fingerprinted: left at these values they keep the older fingerprints
LATER_PARAMS = {"gt": {"ahead": 0.0}}


class Dataset(BaseModel):
    """Which questions: a source (``sample``, ``specbench`` or a JSONL path, ``jobs/question_file.py``) and
    optional filters. Categories of ``sample``/``specbench`` are checked here, a file's by ``load_questions``."""

    model_config = _STRICT
    source: str = Field("sample", min_length=1, pattern=r"\S")
    categories: Optional[list[str]] = Field(None, min_length=1)
    limit_per_category: Optional[int] = Field(None, ge=1)
    question_ids: Optional[list[int]] = Field(None, min_length=1)


class Calibrate(BaseModel):
    """Where and how long the cost model is measured (``actors/costs/calibrate.py``)."""

    model_config = _STRICT
    context: int = Field(256, ge=1, le=1_000_000)
    max_tokens: int = Field(64, ge=1, le=4096)
    repeats: int = Field(3, ge=1, le=1000)
    judge: bool = True        # false: trust the measurement whatever its residuals and the machine's load


class SweepConfig(BaseModel):
    """A validated sweep: the one schema the YAML loader, the driver and the replay CLI read.

    ``policies`` holds resolved ``(name, params)`` pairs and ``generation`` the checked settings
    once :func:`parse_config` has run (``ar`` dropped: it is the baseline of every task)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, populate_by_name=True)
    name: str = NonEmpty
    pairs: list[PairEntry] = Field(min_length=1)
    policies: list[Any] = Field(min_length=1)
    gammas: list[int] = Field(default_factory=lambda: list(PAPER_GAMMAS), min_length=1)
    dataset: Dataset = Field(default_factory=Dataset)
    generation: dict = Field(default_factory=dict)
    repeats: int = Field(1, ge=1, le=1000)
    seed: int = Field(0, ge=0, le=SEED_MAX)
    warmup: int = Field(3, ge=0, le=1000)
    task_warmup: int = Field(1, ge=0, le=100)   # untimed ar runs of a task's own questions before its first timed ar
    output: str = Field("runs/sweep", min_length=1, pattern=r"\S")
    tracking_uri: str = Field("sqlite:///mlflow.db", min_length=1)
    experiment: str = ""
    block_size: int = Field(0, ge=0)
    batch_sizes: list[int] = Field(default_factory=lambda: [1], min_length=1)    # rows decoded together (docs/definitions.md, Batches)
    calibrate: Calibrate = Field(default_factory=Calibrate)
    mode: Literal["live", "replay", "both"] = "live"      # docs/replay.md
    validate_fraction: Number = Field(0.2, ge=0, le=1, alias="validate")   # replay: share of configs also run live
    rollout_length: Optional[int] = Field(None, ge=1, le=MAX_GAMMA)  # replay: proposals recorded per position

    def plain(self) -> dict:
        """The config as plain data, each section as written (unset dataset/calibrate keys left out)."""
        d = self.model_dump(by_alias=True)
        d["dataset"] = {"source": "sample", **self.dataset.model_dump(exclude_unset=True)}
        d["calibrate"] = self.calibrate_settings()
        return d

    def calibrate_settings(self) -> dict:
        """Keyword arguments for ``Pair.calibrate``."""
        return {"context": 256, "max_tokens": 64, **self.calibrate.model_dump(exclude_unset=True)}

    def fingerprint(self) -> str:
        """Identity of what the sweep computes (output/tracking locations excluded)."""
        d = self.plain()
        for k in ("output", "tracking_uri", "experiment"):
            d.pop(k)
        if d["task_warmup"] == 1:      # the default keeps older outputs' fingerprints (their later tasks run warmed)
            d.pop("task_warmup")
        if d["batch_sizes"] == [1]:    # batch-1 sweeps keep the fingerprints they had before batches existed
            d.pop("batch_sizes")
        if d["mode"] == "live":        # live sweeps keep the fingerprints they had before replay existed
            for k in ("mode", "validate", "rollout_length"):
                d.pop(k)
        d["policies"] = [(name, {k: v for k, v in params.items() if LATER_PARAMS.get(name, {}).get(k, object()) != v})
                         for name, params in d["policies"]]
        for pair in d["pairs"]:        # engine options left at their defaults keep older outputs' fingerprints
            for k, default in ENGINE_DEFAULTS.items():
                if pair.get(k) == default:
                    pair.pop(k)
        ds = self.dataset      # a question file: the selected questions themselves (jobs/dataset_identity.py)
        d["dataset"]["questions"] = file_selection_digest(ds.source, ds.categories, ds.limit_per_category,
                                                          ds.question_ids)
        if d["dataset"]["questions"] is None:
            d["dataset"].pop("questions")
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def replay_settings(self) -> dict | None:
        """What a PairActor needs to replay (None for a live sweep)."""
        return None if self.mode == "live" else {"rollout_length": self.rollout_length}

    @property
    def experiment_name(self) -> str:
        return self.experiment or self.name

    def public_dict(self) -> dict:
        """The config as a dict safe to store or print: credentials in the tracking URI are masked."""
        d = self.plain()
        d["tracking_uri"] = redact(self.tracking_uri)
        return d


_MODELS = {(): SweepConfig, ("pairs", "*"): PairEntry, ("dataset",): Dataset, ("calibrate",): Calibrate}
_HINTS = {"name": "give the sweep a name (it is the MLflow experiment)",
          "pairs": "list at least one target/draft pair",
          "policies": "list at least one policy (see `specsweep policies`)",
          "target": "give a hub id, a local folder or an alias such as smollm2-135m"}


def field_path(loc) -> str:
    """``('pairs', 0, 'dtype')`` → ``pairs[0].dtype``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _err(path: str, msg: str):
    raise SpecsweepError(f"config {path}: {msg}")


def _first_error(errors: list[dict]) -> tuple[dict, int]:
    """The first problem and how many distinct fields have one; a number field's int/float tries count once."""
    by_loc: dict = {}
    for e in errors:
        loc = tuple(p for p in e["loc"] if p not in ("int", "float"))
        if loc != e["loc"] and e["type"] in ("int_type", "float_type"):
            e = {**e, "type": "number_type"}
        by_loc.setdefault(loc, {**e, "loc": loc})
    return next(iter(by_loc.values())), len(by_loc)


def _explain(e: dict) -> str:
    kind, loc, value = e["type"], e["loc"], e.get("input")
    last = loc[-1] if loc else ""
    if kind == "number_type":
        return f"must be a number, got {clip(value, 80)}"
    if kind == "missing":
        return "missing" + (f": {_HINTS[last]}" if last in _HINTS else "")
    if kind == "extra_forbidden":
        shape = tuple("*" if isinstance(p, int) else p for p in loc[:-1])
        model = _MODELS.get(shape)
        valid = ", ".join(f.alias or name for name, f in model.model_fields.items()) if model else "see docs/sweeps.md"
        return f"unknown field; valid fields: {valid}"
    if kind == "bool_type":
        return f"must be a YAML boolean (true or false, unquoted), got {clip(value, 80)}"
    if kind == "finite_number":
        return f"must be a finite number, got {clip(value, 80)}"
    if kind == "too_short" and isinstance(value, list):
        return "must not be empty" + (f": {_HINTS[last]}" if last in _HINTS else "")
    msg = e["msg"]
    if kind == "string_pattern_mismatch":
        msg = ("must be auto, cpu, cuda or cuda:N" if last == "device" else "must not be empty")
    return f"{msg[0].lower()}{msg[1:]}, got {clip(value, 80)}"


def _finite_params(path: str, name: str, params: dict) -> None:
    """Parameters given as a YAML mapping keep their YAML types: bools are booleans, numbers are finite numbers."""
    spec = REGISTRY.get(name, (None, {}, ""))[1]
    for k, v in params.items():
        p = spec.get(k)
        if p is None:
            continue
        if p.kind is bool and not isinstance(v, bool):
            _err(f"{path}.{k}", f"must be a YAML boolean (true or false, unquoted), got {v!r}")
        if p.kind in (int, float) and (isinstance(v, bool) or not isinstance(v, (int, float))):
            _err(f"{path}.{k}", f"must be a number, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            _err(f"{path}.{k}", f"must be a finite number, got {v!r}")


def _policy(path, entry) -> tuple[str, dict]:
    if isinstance(entry, str):
        try:
            name, params = parse(entry)
        except SpecsweepError as e:
            _err(path, str(e))
    elif isinstance(entry, dict) and "name" in entry:
        unknown = sorted(set(entry) - {"name", "params"})
        if unknown:
            _err(f"{path}.{unknown[0]}", "unknown field; valid fields: name, params")
        name, params = entry["name"], entry.get("params") or {}
        _finite_params(f"{path}.params", name, params if isinstance(params, dict) else {})
    elif isinstance(entry, dict) and len(entry) == 1:
        name, params = next(iter(entry.items()))
        params = params or {}
        _finite_params(f"{path}.{name}", name, params if isinstance(params, dict) else {})
    else:
        _err(path, f"expected a policy name, {{name: {{param: value}}}} or {{name: ..., params: {{...}}}}, got {entry!r}")
    if not isinstance(name, str):
        _err(path, f"policy name must be a string, got {name!r}")
    if not isinstance(params, dict):
        _err(path, f"parameters of {name} must be a mapping, got {params!r}")
    try:
        return resolve(name, params)
    except SpecsweepError as e:
        _err(path, str(e))


def _no_duplicates(path: str, values: list, what: str, shown: list | None = None) -> None:
    seen: dict = {}
    for i, v in enumerate(values):
        key = json.dumps(v, sort_keys=True, default=str)
        if key in seen:
            _err(f"{path}[{i}]", f"{what} {(shown or values)[i]!r} is already listed at {path}[{seen[key]}]; "
                                 "list each once")
        seen[key] = i


def _gammas(gammas: list) -> None:
    for i, g in enumerate(gammas):
        check_gamma(g, f"config gammas[{i}]:")
    _no_duplicates("gammas", gammas, "initial γ")


def parse_policies_and_gammas(entries, gammas) -> tuple[list[tuple[str, dict]], list[int]]:
    """A policy list and a γ list as a sweep config takes them (``ar`` dropped: it is the baseline)."""
    if not isinstance(entries, list) or not entries:
        _err("policies", f"must be a non-empty list of policies, got {entries!r}")
    if not isinstance(gammas, list) or not gammas:
        _err("gammas", f"must be a non-empty list of integers, got {gammas!r}")
    policies = [_policy(f"policies[{i}]", p) for i, p in enumerate(entries)]
    _no_duplicates("policies", [list(p) for p in policies], "policy")
    _gammas(gammas)
    policies = [p for p in policies if p[0] != "ar"]
    if not policies:
        _err("policies", "ar alone: ar is the baseline; list at least one speculative policy")
    return policies, list(gammas)


def _check_tracking_uri(uri: str) -> None:
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    if scheme.split("+")[0] not in TRACKING_SCHEMES:
        _err("tracking_uri", f"{redact(uri)!r} is not a tracking store URI; use sqlite:///PATH.db, "
                             "http(s)://HOST:PORT, postgresql://..., mysql://... or databricks")


def parse_config(raw: dict, source: str = "config", listed: list | None = None) -> SweepConfig:
    """``raw`` (a YAML mapping) as a :class:`SweepConfig`, or one line naming the first bad field and what is valid.

    ``listed``: every temperature of the list ``raw`` was expanded from (:func:`parse_configs`); the greedy-only
    policies are checked against all of them."""
    if not isinstance(raw, dict):
        raise SpecsweepError(f"{source}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        cfg = SweepConfig.model_validate(raw)
    except ValidationError as exc:
        first, n = _first_error(exc.errors())
        more = f" (and {n - 1} more problem(s))" if n > 1 else ""
        raise SpecsweepError(f"config {field_path(first['loc']) or 'top level'}: {_explain(first)}{more}") from None

    check_config_texts(cfg)
    for i, p in enumerate(cfg.pairs):
        kind = kind_of(p.draft)
        if kind is not None and p.draft_quantization and not kind.has_weights:
            _err(f"pairs[{i}].draft_quantization", f"the {kind.name} drafter has no weights to quantize; remove it")
    _no_duplicates("pairs", [p.label for p in cfg.pairs], "pair label")
    entries = cfg.policies
    policies = [_policy(f"policies[{i}]", p) for i, p in enumerate(entries)]
    _no_duplicates("policies", [list(p) for p in policies], "policy",
                   [entries[i] if isinstance(entries[i], str) else p[0] for i, p in enumerate(policies)])
    cfg.policies = [p for p in policies if p[0] != "ar"]  # ar runs in every task anyway
    if not cfg.policies:
        _err("policies", "ar alone: the ar baseline runs in every task; list at least one speculative policy")
    _gammas(cfg.gammas)
    for i, b in enumerate(cfg.batch_sizes):
        if not 1 <= b <= MAX_BATCH:
            _err(f"batch_sizes[{i}]", f"{b} is out of range: a batch size is an integer >= 1 and <= {MAX_BATCH}")
    _no_duplicates("batch_sizes", cfg.batch_sizes, "batch size")
    for key, what in (("categories", "category"), ("question_ids", "question id")):
        if getattr(cfg.dataset, key):
            _no_duplicates(f"dataset.{key}", getattr(cfg.dataset, key), what)
    for i, c in enumerate(cfg.dataset.categories or ()):
        valid = CATEGORIES + SAMPLE_EXTRA if cfg.dataset.source == "sample" else CATEGORIES
        if cfg.dataset.source in ("sample", "specbench") and c not in valid:
            _err(f"dataset.categories[{i}]", f"unknown category {c!r}: valid categories are {', '.join(valid)}")
    cfg.generation = check_generation(cfg.generation, lambda key: f"config generation.{key}:")
    _greedy_only(cfg.policies, listed if listed is not None else [cfg.generation["temperature"]], listed is not None)
    _check_tracking_uri(cfg.tracking_uri)
    return cfg


def _greedy_only(policies, temperatures: list, listed: bool) -> None:
    """Rule: ``oracle`` and every policy with a sampling blocker run at temperature 0 only, so a config with any
    temperature > 0 (of a list: any listed one) refuses them."""
    hot = [t for t in temperatures if t > 0]
    if not hot:
        return
    fix = (f"generation.temperature lists {', '.join(f'{t:g}' for t in hot)}: list only 0" if listed
           else "set generation.temperature: 0")
    if any(p[0] == "oracle" for p in policies):
        _err("policies", f"oracle is defined for greedy decoding only; {fix} or drop it")
    for name, _ in policies:
        blocker = REGISTRY[name][0].sampling_blocker
        if blocker is not None:
            _err("policies", f"{name} is defined for greedy decoding only ({blocker}); {fix} or drop it")


def load_config(path: str) -> SweepConfig:
    """The sweep config in the YAML file ``path``, validated (one line naming what is wrong otherwise)."""
    return parse_config(read_yaml_mapping(path), path)
