"""This checkout's engine against the engine of an earlier commit, side by side in one run, on the embedded pair.

    python -m bench.engine_vs_commit --base COMMIT [--questions 9017 9018 …] [--repeats 3] [--max-new-tokens 48]
    python -m bench.engine_vs_commit --base COMMIT --quick          # 2 questions, 1 repeat, 24 tokens

Both sides run the same public command in their own tree (``python -m jobs.cli generate --dataset sample
--question-ids … --answers F``, a fresh process per run, one warm-up generation discarded), so the figures
do not depend on either side's internals. The base commit is checked out once as a git worktree under
$TMPDIR. Runs alternate base/new and swap which goes first every repeat, so drift hits both alike.

Configs at batch size 1 (no ``--batch-size``: each side's single-question path): ``ar``; ``fixed`` γ = 4 with
the distilled draft; ``fixed`` γ = 4 with the EAGLE head; the EAGLE-2 tree with the EAGLE head. At batch
size 16: ``ar`` over 16 questions' turns (``--batch-size 16``).

Figures (bench rule: ratios of the two sides measured in this run):
- B = 1: per question, tokens and seconds summed over repeats and turns (the answer file's ``new_tokens``
  and ``wall_time``: prefill and every step, tokenisation excluded); ratio new/base of Σ tokens / Σ seconds
  with a 95 % paired bootstrap interval over questions (``jobs/report/intervals.py``). The goal is ≥ 0.97.
- B = 16: each run's total tokens / batch seconds (the command's own summary line); ratio of the means over
  repeats with a percentile bootstrap over repeats (few repeats: a rough interval).
- Greedy tokens must match between the sides (the engines are lossless); a mismatch is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from jobs.report.intervals import paired_ratio, percentile_interval

ROOT = Path(__file__).resolve().parents[1]
SINGLE = [  # (label, generate flags)
    ("ar", ["--policy", "ar"]),
    ("fixed γ=4, draft", ["--policy", "fixed", "--gamma", "4", "--draft", "smollm2-135m-draft"]),
    ("fixed γ=4, EAGLE head", ["--policy", "fixed", "--gamma", "4", "--draft", "smollm2-135m-eagle"]),
    ("EAGLE-2 tree, EAGLE head", ["--policy", "eagle2", "--draft", "smollm2-135m-eagle"]),
]
QUESTIONS = [9017, 9018, 9019, 9021, 9022, 9023, 9024, 9025]
SUMMARY = re.compile(r"(\d+) tokens in ([0-9.]+) s")


def base_tree(commit: str) -> Path:
    """A worktree of ``commit`` (made once, reused)."""
    sha = subprocess.run(["git", "rev-parse", commit], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    path = Path(tempfile.gettempdir()) / f"specsweep-base-{sha[:12]}"
    if not (path / "jobs" / "cli.py").exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=ROOT, check=True,
                       capture_output=True)
    return path


def run_generate(tree: Path, flags: list[str], questions: list[int], tokens: int, answers: Path | None) -> str:
    cmd = [sys.executable, "-m", "jobs.cli", "generate", "--dataset", "sample", "--question-ids",
           ",".join(map(str, questions)), "--max-new-tokens", str(tokens), "--warmup", "1", *flags]
    if answers is not None:
        cmd += ["--answers", str(answers)]
    env = {**os.environ, "PYTHONPATH": str(tree), "TQDM_DISABLE": "1"}
    p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{tree.name}: {' '.join(flags)} failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return p.stdout


def per_question(answers: Path) -> dict[int, tuple[int, float, list]]:
    """question id → (tokens, seconds, token texts) from a Spec-Bench answer file."""
    out = {}
    for line in answers.read_text().splitlines():
        rec = json.loads(line)
        ch = rec["choices"][0]
        out[int(rec["question_id"])] = (sum(ch["new_tokens"]), sum(ch["wall_time"]), ch["turns"])
    return out


def bench_single(trees: dict, flags, questions, tokens, repeats, scratch: Path) -> dict:
    sums = {side: {q: [0, 0.0] for q in questions} for side in trees}
    texts, mismatch = {}, 0
    for r in range(repeats):
        order = list(trees) if r % 2 == 0 else list(trees)[::-1]
        for side in order:
            f = scratch / f"{side}-{r}.jsonl"
            f.unlink(missing_ok=True)
            run_generate(trees[side], flags, questions, tokens, f)
            for q, (n, s, turns) in per_question(f).items():
                sums[side][q][0] += n
                sums[side][q][1] += s
                mismatch += q in texts and texts[q] != turns
                texts.setdefault(q, turns)
    new = [sums["new"][q][0] / sums["new"][q][1] for q in questions]
    base = [sums["base"][q][0] / sums["base"][q][1] for q in questions]
    point, lo, hi = paired_ratio(new, base)
    return {"new_tok_s": float(np.mean(new)), "base_tok_s": float(np.mean(base)), "ratio": point, "lo": lo, "hi": hi,
            "text_mismatches": mismatch}


def bench_batch(trees: dict, questions, tokens, repeats, size: int) -> dict:
    rates = {side: [] for side in trees}
    for r in range(repeats):
        order = list(trees) if r % 2 == 0 else list(trees)[::-1]
        for side in order:
            out = run_generate(trees[side], ["--policy", "ar", "--batch-size", str(size)], questions, tokens, None)
            m = SUMMARY.search(out)
            if not m:
                raise SystemExit(f"{side}: no batch summary line in: {out[-300:]}")
            rates[side].append(int(m.group(1)) / float(m.group(2)))
    new, base = np.array(rates["new"]), np.array(rates["base"])
    rng = np.random.default_rng(0)
    idx = rng.integers(0, repeats, size=(2000, repeats))
    lo, hi = percentile_interval(new[idx].mean(1) / base[idx].mean(1))
    return {"new_tok_s": float(new.mean()), "base_tok_s": float(base.mean()), "ratio": float(new.mean() / base.mean()),
            "lo": float(lo), "hi": float(hi)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the commit to compare against (e.g. the one before the change)")
    ap.add_argument("--questions", type=int, nargs="+", default=QUESTIONS)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    if a.quick:
        a.questions, a.repeats, a.max_new_tokens = a.questions[:2], 1, 24
    trees = {"base": base_tree(a.base), "new": ROOT}
    print(f"base {a.base} ({trees['base']}) vs this checkout; questions {a.questions}, {a.repeats} repeat(s), "
          f"{a.max_new_tokens} new tokens, greedy", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for label, flags in SINGLE:
            m = bench_single(trees, flags, a.questions, a.max_new_tokens, a.repeats, Path(tmp))
            print(f"B=1  {label:26s} new {m['new_tok_s']:6.2f} tok/s  base {m['base_tok_s']:6.2f} tok/s  "
                  f"new/base {m['ratio']:.3f} [{m['lo']:.3f}, {m['hi']:.3f}]"
                  + (f"  TOKEN MISMATCHES {m['text_mismatches']}" if m["text_mismatches"] else ""), flush=True)
        qs = [q.question_id for q in __import__("jobs.dataset", fromlist=["x"]).load_questions("sample")][:a.batch_size]
        m = bench_batch(trees, qs, a.max_new_tokens, max(a.repeats, 3), a.batch_size)
        print(f"B={a.batch_size} ar                          new {m['new_tok_s']:6.2f} tok/s  base {m['base_tok_s']:6.2f} "
              f"tok/s  new/base {m['ratio']:.3f} [{m['lo']:.3f}, {m['hi']:.3f}] (interval over repeats)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
