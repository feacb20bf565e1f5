"""Sweep configs whose ``generation.temperature`` is a list: one validated :class:`~jobs.config.SweepConfig` per
temperature, each into its own folder ``<output>/T<t>`` under the name ``<name>-T<t>``, every one checked before the
first runs (the GT paper's Figure 3 is such a list: ``jobs/configs/gt_temperature.yaml``).
"""
from __future__ import annotations

import os

from jobs.config import SweepConfig, _err, parse_config
from jobs.yaml_reader import read_yaml_mapping
from policies.registry import check_generation

TEMPERATURE = "generation.temperature"


def temperature_label(t) -> str:
    """The folder name of temperature ``t``: ``T`` and ``t`` in ``:g`` format (``T0``, ``T0.2``, ``T1``)."""
    return f"T{t + 0.0:g}"          # + 0.0: -0.0 is T0


def listed_temperatures(raw) -> list | None:
    """``generation.temperature`` of ``raw`` (a YAML mapping) when it is a list, else None."""
    gen = raw.get("generation") if isinstance(raw, dict) else None
    value = gen.get("temperature") if isinstance(gen, dict) else None
    return value if isinstance(value, list) else None


def check_temperatures(values: list) -> None:
    """Rule for a listed ``generation.temperature``: at least one entry, each a temperature as a single value is
    (0, greedy, or a number >= 0.0001 and <= 100), no two with the same folder name (:func:`temperature_label`: 0 and 0.0 are one)."""
    if not values:
        _err(TEMPERATURE, "is an empty list; list at least one temperature, e.g. [0.0, 0.5, 1.0], or give one number")
    seen: dict = {}
    for i, v in enumerate(values):
        check_generation({"temperature": v}, lambda key: f"config {TEMPERATURE}[{i}]:")
        label = temperature_label(v)
        if label in seen:
            _err(f"{TEMPERATURE}[{i}]", f"temperature {v!r} is already listed at {TEMPERATURE}[{seen[label]}] "
                                        f"(both are {label}); list each once")
        seen[label] = i


def at_temperature(raw: dict, t, suffix: bool = True) -> dict:
    """``raw`` at the single temperature ``t``; with ``suffix`` also ``output`` → ``<output>/T<t>`` and ``name`` →
    ``<name>-T<t>`` (``experiment`` too when set). A field of the wrong type is left for validation to refuse."""
    out = {**raw, "generation": {**raw["generation"], "temperature": t}}
    if not suffix:
        return out
    label = temperature_label(t)
    output = raw.get("output", SweepConfig.model_fields["output"].default)
    if isinstance(output, str) and output.strip():
        out["output"] = os.path.join(output, label)
    for key in ("name", "experiment"):
        if isinstance(raw.get(key), str) and raw[key].strip():
            out[key] = f"{raw[key]}-{label}"
    return out


def parse_configs(raw: dict, source: str = "config") -> list[SweepConfig]:
    """``raw`` as one :class:`SweepConfig` per temperature, in the listed order, every one validated.

    A single temperature (a number, or a list of one) gives one config, as :func:`parse_config` does. A list of
    several gives one config per temperature, each into ``<output>/T<t>`` under the name ``<name>-T<t>``
    (:func:`at_temperature`); a greedy-only policy is refused when any listed temperature is > 0."""
    temps = listed_temperatures(raw)
    if temps is None:
        return [parse_config(raw, source)]
    check_temperatures(temps)
    if len(temps) == 1:
        return [parse_config(at_temperature(raw, temps[0], suffix=False), source)]
    return [parse_config(at_temperature(raw, t), source, listed=temps) for t in temps]


def load_configs(path: str) -> list[SweepConfig]:
    """The sweep configs of the YAML file ``path``, one per temperature (:func:`parse_configs`), all validated."""
    return parse_configs(read_yaml_mapping(path), path)
