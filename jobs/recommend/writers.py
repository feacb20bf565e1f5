"""The engines' own config text from a :class:`~jobs.recommend.selection.Recommendation`, and the notes beside it.

- vLLM: the ``speculative_config`` JSON object (``--speculative-config``): ``method``, ``model``,
  ``num_speculative_tokens`` (the largest K) and ``num_speculative_tokens_per_batch_size`` as ``[start, end, K]``
  ranges; ``null`` when ``ar`` wins everywhere (no speculative config). JSON holds no comments: the notes go beside.
- SGLang: the server flags, one setting for every batch size, with ``#`` comment lines.
- TensorRT-LLM: the ``speculative_config`` of an LLM-API YAML file (``decoding_type``, ``max_draft_len``,
  ``speculative_model``, ``draft_len_schedule``) with ``#`` comments; ``speculative_config: null`` when off.

A measured batch size B covers the sizes above the previous measured one up to B (TensorRT-LLM's "a value applies
up to its key"); the sizes between two measured ones are marked interpolated.
"""
from __future__ import annotations

import json
import math
import shlex

from jobs.recommend import engines
from jobs.recommend.selection import Choice, Recommendation
from jobs.report.intervals import verdict
from jobs.report.text import interval


def times(value: float, lo: float = math.nan, hi: float = math.nan) -> str:
    """``1.50× [1.42, 1.58]`` (no interval from a single batch)."""
    return f"{value:.2f}×{interval(lo, hi)}"


def k_of(c: Choice) -> int:
    return int(c.chosen.setting.get("K", c.chosen.setting.get("steps", 0)))


def ranges(rec: Recommendation) -> list[tuple[int, int, int, int]]:
    """(start, end, K, measured batch size) per usable batch size: start = the previous measured size + 1 (1 first)."""
    out, start = [], 1
    for c in rec.choices:
        out.append((start, c.batch_size, k_of(c), c.batch_size))
        start = c.batch_size + 1
    return out


def gap(start: int, end: int) -> str:
    """The unmeasured sizes start … end − 1 as text."""
    return f"{start}" if start == end - 1 else f"{start}–{end - 1}"


def range_lines(rec: Recommendation) -> list[str]:
    """One line per range: measured, or interpolated from the measured size that ends it; then what lies above (none
    for SGLang, whose one setting serves every batch size)."""
    if rec.engine == "sglang":
        return []
    lines = []
    for start, end, k, measured in ranges(rec):
        if start < end:
            lines.append(f"batch size {gap(start, end)}: K={k} interpolated (not measured: the K measured at "
                         f"{measured})")
        lines.append(f"batch size {end}: K={k} measured")
    top = rec.choices[-1]
    above = {"vllm": f"the engine keeps the last range's K={k_of(top)} (not measured)",
             "trtllm": "K=0 (the engine switches speculation off past its last key; not measured)"}[rec.engine]
    lines.append(f"above batch size {top.batch_size}: {above}")
    return lines


def choice_row(c: Choice, engine: str) -> str:
    o = c.chosen
    if o.policy == "ar":
        sp = "1.00× (speculation off)"
    else:
        v = verdict(o.speedup, o.lo, o.hi, c.floor)
        sp = f"{times(o.speedup, o.lo, o.hi)} {v or '(1 batch: no interval)'}"
    run, within = "–", "–"
    if c.runner is not None:
        run = f"{c.runner.name}: {times(*c.runner_ratio)}"
        floor = f"floor {c.floor:.1%}" if math.isfinite(c.floor) else "no floor measured"
        within = {True: f"yes ({floor})", False: f"no ({floor})", None: "– (1 batch: no interval)"}[c.within_noise]
    beyond = "–"
    if c.adaptive is not None:
        a = c.adaptive
        beyond = f"{a.name}: {times(a.speedup, a.lo, a.hi)} vs ar, {times(*c.adaptive_ratio)} the choice"
    return (f"| {c.batch_size} | {c.batches} | {o.name} | {engines.describe(engine, o.setting)} | {sp} | {run} | "
            f"{within} | {beyond} |")


def notes_md(rec: Recommendation) -> str:
    """The choices in words: per batch size the choice, its speedup vs ``ar`` with its interval, the runner-up and
    whether it is within the noise floor, and the policy beyond the engine; the ranges; what was left out."""
    label = engines.LABELS[rec.engine]
    modes = ", ".join(f"{n} {m}" for m, n in sorted(rec.modes.items()))
    lines = [f"# specsweep recommend: {label} for pair {rec.pair}", "",
             f"target {rec.target or '?'} · draft {rec.draft or '–'} ({rec.kind} drafter → {label} `{rec.method}`) · "
             f"rows: {modes}", "",
             "| B | batches | choice | setting | speedup vs ar at B [95 %] | runner-up: choice / runner-up [95 %] | "
             "runner-up within the noise floor | beyond the engine (beat every expressible setting) |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [choice_row(c, rec.engine) for c in rec.choices]
    lines += [""] + [f"- {x}" for x in range_lines(rec)]
    if rec.engine == "sglang" and rec.deploy is not None:
        lines += [f"SGLang takes one setting for every batch size, measured or not: {rec.deploy.name} "
                  f"({engines.describe('sglang', rec.deploy.setting)}), the highest geometric-mean speedup over the "
                  f"batch sizes above ({rec.deploy_geomean:.2f}×)."]
    extra = [n for c in rec.choices for n in c.notes] + [f"batch size {s} left out: {why}" for s, why in rec.skipped]
    if extra:
        lines += [""] + [f"- {x}" for x in extra]
    lines += ["", "Speedups: total tokens/s of a batch vs ar at the same batch size, 95 % paired-bootstrap intervals "
                  "over batches (jobs/report/batches.py); how the fields map: docs/recommend.md."]
    return "\n".join(lines) + "\n"


def vllm_text(rec: Recommendation) -> str:
    ks = [(start, end, k) for start, end, k, _ in ranges(rec)]
    if not any(k for _, _, k in ks):
        return "null\n"
    merged = []
    for start, end, k in ks:
        if merged and merged[-1][2] == k:
            merged[-1][1] = end
        else:
            merged.append([start, end, k])
    cfg = {"method": rec.method}
    model = rec.serving.model
    if model:
        cfg["model"] = model
    if rec.serving.lookup:
        cfg["prompt_lookup_min"], cfg["prompt_lookup_max"] = rec.serving.lookup
    cfg["num_speculative_tokens"] = max(k for _, _, k in ks)
    cfg["num_speculative_tokens_per_batch_size"] = merged
    text = json.dumps(cfg, indent=2)                       # one range per line: [start, end, K]
    return text.replace(json.dumps(merged, indent=2).replace("\n", "\n  "), "[\n    " + ",\n    ".join(
        json.dumps(r) for r in merged) + "\n  ]") + "\n"


def _comments(rec: Recommendation) -> list[str]:
    head = [f"specsweep recommend --for {rec.engine}: pair {rec.pair} (target {rec.target or '?'}, draft "
            f"{rec.draft or '–'})"]
    for c in rec.choices:
        o = c.chosen
        sp = "speculation off (ar fastest)" if o.policy == "ar" else \
            f"{o.name}, {times(o.speedup, o.lo, o.hi)} vs ar"
        run = "" if c.runner is None else f"; runner-up {c.runner.name} " + (
            "within the noise floor" if c.within_noise else "resolved slower" if c.within_noise is False else
            "(no interval)")
        beyond = "" if c.adaptive is None else f"; beyond the engine: {c.adaptive.name} {c.adaptive.speedup:.2f}×"
        head.append(f"B={c.batch_size}: {sp}{run}{beyond}")
    return ["# " + x for x in head + range_lines(rec)]


def sglang_text(rec: Recommendation) -> str:
    o = rec.deploy
    lines = _comments(rec)
    if o is None or not o.setting["steps"]:
        return "\n".join(lines + ["# speculation off: leave out every --speculative-* flag"]) + "\n"
    lines.append(f"# one setting for every batch size: {o.name} (geometric-mean speedup {rec.deploy_geomean:.2f}×)")
    flags = ["--speculative-algorithm", rec.method]
    model = rec.serving.model
    if rec.method == "NGRAM":
        flags += ["--speculative-num-draft-tokens", str(o.setting["draft_tokens"])]
    else:
        flags += ["--speculative-draft-model-path", model, "--speculative-num-steps", str(o.setting["steps"]),
                  "--speculative-eagle-topk", str(o.setting["topk"]),
                  "--speculative-num-draft-tokens", str(o.setting["draft_tokens"])]
    return "\n".join(lines + [shlex.join(flags)]) + "\n"


def trtllm_text(rec: Recommendation) -> str:
    lines = _comments(rec)
    rs = ranges(rec)
    if not rs[0][2]:
        return "\n".join(lines + ["# speculation off: ar is fastest at the smallest batch size, and the schedule "
                                  "must hold its longest draft there", "speculative_config: null"]) + "\n"
    top = rs[0][2]
    lines += ["speculative_config:", f"  decoding_type: {rec.method}", f"  max_draft_len: {top}"]
    model = rec.serving.model
    if model:
        lines.append(f"  speculative_model: {json.dumps(model)}")
    if rec.serving.lookup:
        lines.append(f"  max_matching_ngram_size: {rec.serving.lookup[1]}")
    lines.append("  draft_len_schedule:    # K for the batch sizes up to each key, 0 above the last (releases that "
                 "read a key as the first size of its range need the keys moved: docs/recommend.md)")
    if rs[0][3] != 1:
        lines.append(f"    1: {top}    # batch size 1 must be a key: interpolated from batch size {rs[0][3]}")
    for start, end, k, measured in rs:
        how = "measured" if start == end else f"{gap(start, end)} interpolated, {end} measured"
        lines.append(f"    {end}: {k}    # {how}")
    return "\n".join(lines) + "\n"


WRITERS = {"vllm": vllm_text, "sglang": sglang_text, "trtllm": trtllm_text}
