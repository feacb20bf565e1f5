"""Spec-Bench's own speed numbers, recomputed from answer files (Spec-Bench evaluation/speed.py).

Spec-Bench's ``evaluation/speed.py`` reads a method's answer file and a baseline
(autoregressive) answer file; this module computes the same numbers with our own code,
so a sweep can be compared with published Spec-Bench tables. The rules, as speed.py
applies them:

- questions of a task: ``overall`` every question; ``mt_bench`` the eight MT-bench
  categories; any other task (translation, summarization, qa, math_reasoning, rag) the
  questions whose category equals it. A task with no questions gives NaN.
- method, per question: Σ_turns new_tokens / Σ_turns wall_time, as the method wrote them.
- baseline, per question: its tokens are RE-COUNTED from the answer text with the target
  tokenizer, each turn counting ``len(tokenizer(text).input_ids) − 1`` (the − 1 drops the
  BOS a LLaMA tokenizer adds; a tokenizer that adds none loses a real token), over
  Σ_turns wall_time. The baseline's own new_tokens are never read.
- one run: tok/s = mean over the task's questions; speedup = mean method tok/s ÷ mean
  baseline tok/s (a ratio of means; questions are not paired, every baseline question of
  the task counts).
- repeats (speed.py ``get_mean_speedup``: run i of the method with run i of the baseline):
  each value is the mean of the per-run values, with the sample std over runs (ddof = 1,
  NaN for one run); mean accepted tokens = mean of ``accept_lengths`` pooled over every
  question of every run (speed.py reads ``accept_lengths``, not new_tokens / decoding_steps).

Ours (``jobs/report/metrics.py``) differ on purpose: ar tokens are the generated ids, a config and ar are
compared on the questions both ran, and a config's throughput pools questions ×
repeats before one ratio is taken. ``parity_table`` puts both side by side; see
docs/uncertainty.md, "Spec-Bench parity".
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from jobs.dataset import GROUP_ORDER, MT_BENCH
from jobs.report import derived, metrics
from jobs.report.text import interval as interval_text, render, short
from jobs.store.answers import answer_records, answers_filename, read_answers
from jobs.store.parquet_log import existing_log
from policies.errors import SpecsweepError

TASKS = GROUP_ORDER          # speed.py's task list, in its order


def task_records(records: Sequence[dict], task: str = "overall") -> list[dict]:
    """The answer lines speed.py counts for ``task``."""
    if task == "overall":
        return list(records)
    cats = MT_BENCH if task == "mt_bench" else (task,)
    return [r for r in records if r["category"] in cats]


class TextTokens:
    """speed.py's baseline token count of one answer turn, ``len(tokenizer(text).input_ids) − 1``,
    memoised per text (a greedy ar repeats the same texts)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._seen: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        if text not in self._seen:
            self._seen[text] = len(self.tokenizer(text).input_ids) - 1
        return self._seen[text]


def _counter(tokenizer) -> TextTokens:
    return tokenizer if isinstance(tokenizer, TextTokens) else TextTokens(tokenizer)


def _mean(xs: Sequence[float]) -> float:
    return float(np.mean(xs)) if len(xs) else float("nan")


def _std(xs: Sequence[float]) -> float:
    return float(np.std(xs, ddof=1)) if len(xs) > 1 else float("nan")


@dataclass(frozen=True)
class RunSpeed:
    """speed.py's ``speed()`` on one run: both tok/s, their ratio, and the run's accept lengths."""
    tokens_per_second: float
    tokens_per_second_baseline: float
    speedup: float
    accept_lengths: tuple[int, ...]


@dataclass(frozen=True)
class SpecBenchSpeed:
    """speed.py's numbers over runs (one run: the stds are NaN)."""
    task: str
    runs: int
    mean_accepted_tokens: float
    tokens_per_second: float
    tokens_per_second_std: float
    tokens_per_second_baseline: float
    tokens_per_second_baseline_std: float
    speedup: float
    speedup_std: float


def run_speed(method: Sequence[dict], baseline: Sequence[dict], tokenizer, task: str = "overall") -> RunSpeed:
    """One run: per-question tok/s of the method (its new_tokens) and of the baseline (tokens
    re-counted from its text), each averaged over the task's questions; speedup = their ratio."""
    count = _counter(tokenizer)
    m = [r["choices"][0] for r in task_records(method, task)]
    b = [r["choices"][0] for r in task_records(baseline, task)]
    speeds = [derived.question_tok_s(c["new_tokens"], c["wall_time"]) for c in m]
    speeds0 = [derived.throughput(sum(count(t) for t in c["turns"]), sum(c["wall_time"])) for c in b]
    tps, tps0 = _mean(speeds), _mean(speeds0)
    ratio = tps / tps0 if tps0 != 0 else float("nan")
    return RunSpeed(tps, tps0, ratio, tuple(a for c in m for a in c.get("accept_lengths", [])))


def speed(method_runs: Sequence[Sequence[dict]], baseline_runs: Sequence[Sequence[dict]], tokenizer,
          task: str = "overall") -> SpecBenchSpeed:
    """Over runs (run i of the method against run i of the baseline): the mean and sample std of
    the per-run tok/s and speedups; mean accepted tokens pooled over all runs' accept lengths."""
    if len(method_runs) != len(baseline_runs) or not method_runs:
        raise SpecsweepError(f"Spec-Bench speed needs one baseline run per method run, got {len(method_runs)} "
                             f"method and {len(baseline_runs)} baseline run(s)")
    count = _counter(tokenizer)
    runs = [run_speed(m, b, count, task) for m, b in zip(method_runs, baseline_runs)]
    pooled = [a for r in runs for a in r.accept_lengths]
    pick = lambda f: [getattr(r, f) for r in runs]                          # noqa: E731
    return SpecBenchSpeed(task, len(runs), derived.mean_accepted_length(pooled),
                          _mean(pick("tokens_per_second")), _std(pick("tokens_per_second")),
                          _mean(pick("tokens_per_second_baseline")), _std(pick("tokens_per_second_baseline")),
                          _mean(pick("speedup")), _std(pick("speedup")))


def speed_from_files(method_paths: Sequence[Path], baseline_paths: Sequence[Path], tokenizer,
                     task: str = "overall") -> SpecBenchSpeed:
    """``speed`` on answer files, one method file and one baseline file per run."""
    return speed([read_answers(Path(p)) for p in method_paths], [read_answers(Path(p)) for p in baseline_paths],
                 tokenizer, task)


def speed_from_rows(rows: pd.DataFrame, ar_rows: pd.DataFrame, tokenizer, task: str = "overall") -> SpecBenchSpeed:
    """``speed`` on result rows (one config's and its pair's ar), a run per repeat present in both,
    through the answer records ``jobs/store/answers.py`` writes."""
    reps = sorted(set(rows["repeat"]) & set(ar_rows["repeat"]))
    return speed([answer_records(rows[rows["repeat"] == r], "method") for r in reps],
                 [answer_records(ar_rows[ar_rows["repeat"] == r], "ar") for r in reps], tokenizer, task)


def recount_ratio(baseline: Sequence[dict], tokenizer) -> float:
    """Σ baseline tokens as speed.py re-counts them from the text ÷ Σ its generated new_tokens."""
    count = _counter(tokenizer)
    cs = [r["choices"][0] for r in baseline]
    ids = sum(sum(c["new_tokens"]) for c in cs)
    return sum(count(t) for c in cs for t in c["turns"]) / ids if ids else float("nan")


# ---------------------------------------------------------------- beside ours
COLUMNS = ["pair", "policy_spec", "gamma", "repeats", "sb_speedup", "sb_speedup_std", "speedup", "speedup_lo",
           "speedup_hi", "sb_mat", "mal", "ar_recount_ratio"]


def parity_table(df: pd.DataFrame, answers_dir: str | Path, tokenizer_for: Callable[[str], object],
                 tasks: Sequence[str] = ("overall",), resamples: int = metrics.RESAMPLES) -> pd.DataFrame:
    """Per (pair, policy_spec, γ) of a sweep's rows: Spec-Bench speedup (``sb_speedup``: mean of
    the per-repeat ratios, ``sb_speedup_std`` over repeats; ``sb_<task>`` for other tasks) and mean
    accepted tokens (``sb_mat``) read from ``answers_dir``, beside ours from ``metrics.config_summary``
    (``speedup`` with its 95 % interval, ``mal``) on the same rows; ``ar_recount_ratio`` = the
    pair's ar tokens re-counted from text ÷ generated. ``tokenizer_for(pair)`` gives the target
    tokenizer. A config's repeat r is read from ``answers_filename(pair, spec, γ, r)`` against
    the pair's ar file of repeat r."""
    answers_dir = Path(answers_dir)
    summary = metrics.config_summary(df, resamples=resamples)
    measured = metrics.measured(df)
    cache: dict[Path, list[dict]] = {}

    def load(path: Path) -> list[dict]:
        if path not in cache:
            if not path.is_file():
                raise SpecsweepError(f"{path} is missing: the answer files are written when the sweep finishes; "
                                     "run the sweep to the end (or --resume it) first")
            cache[path] = read_answers(path)
        return cache[path]

    out = []
    for pair, part in summary.groupby("pair", sort=True):
        ar = part[part["policy"] == "ar"]
        if ar.empty:
            continue
        count = _counter(tokenizer_for(pair))
        ar_spec, ar_gamma = ar["policy_spec"].iloc[0], int(ar["gamma"].iloc[0])
        ar_reps = set(measured.loc[(measured["pair"] == pair) & (measured["policy"] == "ar"), "repeat"])
        ratio = None
        for r in part[part["policy"] != "ar"].sort_values(["policy_spec", "gamma"]).itertuples():
            mine = measured[(measured["pair"] == pair) & (measured["policy_spec"] == r.policy_spec)
                            & (measured["gamma"] == r.gamma)]
            reps = sorted(set(mine["repeat"]) & ar_reps)
            if not reps:                                        # no repeat shared with ar: nothing to compare
                continue
            m_runs = [load(answers_dir / answers_filename(pair, r.policy_spec, int(r.gamma), int(k))) for k in reps]
            b_runs = [load(answers_dir / answers_filename(pair, ar_spec, ar_gamma, int(k))) for k in reps]
            if ratio is None:
                ratio = recount_ratio([x for run in b_runs for x in run], count)
            sb = speed(m_runs, b_runs, count, "overall")
            row = {"pair": pair, "policy_spec": r.policy_spec, "gamma": int(r.gamma), "repeats": len(reps),
                   "sb_speedup": sb.speedup, "sb_speedup_std": sb.speedup_std, "speedup": r.speedup,
                   "speedup_lo": r.speedup_lo, "speedup_hi": r.speedup_hi, "sb_mat": sb.mean_accepted_tokens,
                   "mal": r.mean_accepted_length, "ar_recount_ratio": ratio}
            for task in tasks:
                if task != "overall":
                    row[f"sb_{task}"] = speed(m_runs, b_runs, count, task).speedup
            out.append(row)
    extra = [f"sb_{t}" for t in tasks if t != "overall"]
    return pd.DataFrame(out, columns=COLUMNS + extra)


def target_tokenizer(target: str):
    """The tokenizer of a pair's target (``actors.loading.models.load_tokenizer``); any failure is one line."""
    from actors.loading.models import ModelSpec, load_tokenizer  # heavy: torch

    try:
        return load_tokenizer(ModelSpec(target))
    except Exception as e:                                      # noqa: BLE001 - reported as one line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise SpecsweepError(f"--specbench re-counts the ar answers with the target tokenizer, and the tokenizer "
                             f"of {target!r} cannot be loaded: {first}") from None


def folder_table(folder: str | Path, tasks: Sequence[str] = TASKS) -> pd.DataFrame:
    """``parity_table`` for a sweep output folder: its Parquet log's rows as the report shows them (one mode per
    config, trusted times: the rows the answer files were written from), ``answers/`` and each pair's target
    tokenizer."""

    folder = Path(folder)
    log = existing_log(folder)
    answers = folder / "answers"
    if not answers.is_dir() or not any(answers.glob("*.jsonl")):
        raise SpecsweepError(f"{folder} has no answers folder with answer files ({answers}): they are written when "
                             "the sweep finishes; run the sweep to the end first")
    from jobs.report.tables import shown_rows     # the rows the report and the answer files use: one mode per config

    df = shown_rows(str(folder), log.read())
    df = df[df["wall_time"].notna()] if len(df) else df
    if df.empty:
        raise SpecsweepError(f"{folder}: the log has no successful rows yet")
    targets = df.groupby("pair")["target"].first().to_dict() if "target" in df else {}
    loaded: dict[str, object] = {}

    def tokenizer_for(pair: str):
        target = targets.get(pair) or pair
        if target not in loaded:
            loaded[target] = target_tokenizer(target)
        return loaded[target]

    return parity_table(df, answers, tokenizer_for, tasks)


def render_parity(t: pd.DataFrame, fmt: str = "md") -> str:
    """The report section: speed.py's overall speedup and MAT beside ours, then speed.py by task."""

    def ci(lo, hi) -> str:
        return interval_text(lo, hi).strip()

    def pm(v, s) -> str:
        return "nan" if v != v else f"{v:.3f}" + ("" if s != s else f" ± {s:.3f}")

    if t.empty:
        return "(no config with an ar baseline)\n"
    main = pd.DataFrame({"pair": t["pair"], "policy_spec": t["policy_spec"].map(short), "γ": t["gamma"],
                         "repeats": t["repeats"],
                         "Spec-Bench speedup (± std over repeats)": [pm(v, s) for v, s in zip(t["sb_speedup"], t["sb_speedup_std"])],
                         "ours": t["speedup"], "ours 95% CI": [ci(lo, hi) for lo, hi in zip(t["speedup_lo"], t["speedup_hi"])],
                         "Spec-Bench MAT": t["sb_mat"], "our MAL": t["mal"],
                         "ar tokens text/ids": t["ar_recount_ratio"]})
    text = ("## Spec-Bench parity: evaluation/speed.py's numbers beside ours (overall)\n" + render(main, fmt)
            + "\nSpec-Bench: ar tokens re-counted from the answer text (len(ids) − 1 per turn), speedup = mean over "
              "repeats of (mean method tok/s ÷ mean ar tok/s). Ours: ar's generated ids, questions × repeats pooled, "
              "one ratio (docs/uncertainty.md, \"Spec-Bench parity\").\n")
    by_task = [c for c in t.columns if c.startswith("sb_") and c[3:] in TASKS and t[c].notna().any()]
    if by_task:
        wide = t[["pair", "policy_spec", "gamma", *by_task, "sb_speedup"]].rename(
            columns={**{c: c[3:] for c in by_task}, "sb_speedup": "overall", "gamma": "γ"})
        wide["policy_spec"] = wide["policy_spec"].map(short)
        text += "\n## Spec-Bench speed.py speedup by task\n" + render(wide, fmt)
    return text


def report_text(folder: str | Path, fmt: str = "md") -> str:
    return render_parity(folder_table(folder), fmt)
