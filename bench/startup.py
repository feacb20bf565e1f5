"""Where `specsweep generate` spends its time before the first token, phase by phase, in fresh interpreters.

    python -m bench.startup [--target smollm2-135m] [--draft smollm2-135m-draft] [--repeats 3]

Each repeat runs a new Python process that times, in order: importing the CLI module (what
`specsweep --help` pays), importing torch + transformers + the engine, loading the pair (tokenizer,
target, draft; the one-off GGUF conversion is done before timing), and generating the first token.
It prints the median and range of each phase and, side by side, the wall time of the whole
`specsweep generate --max-new-tokens 1` command, so the phases can be checked against it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

PHASES = r"""
import json, sys, time
t0 = time.perf_counter()
import jobs.cli
t1 = time.perf_counter()
from actors.pair import Pair, PairConfig
from policies import build
t2 = time.perf_counter()
pair = Pair(PairConfig(target=sys.argv[1], draft=sys.argv[2]))
t3 = time.perf_counter()
from actors.loading.templates import default_template, render
ids = render(default_template(sys.argv[1], pair.tokenizer), pair.tokenizer, [{"role": "user", "content": "Why is the sky blue?"}])
pair.engine.generate(ids, build("fixed", 4), max_new_tokens=1)
t4 = time.perf_counter()
print(json.dumps({"import cli": t1 - t0, "import torch, transformers, engine": t2 - t1, "load pair": t3 - t2,
                  "first token": t4 - t3}))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    subprocess.run([sys.executable, "-c", PHASES, a.target, a.draft], check=True, capture_output=True)  # conversion
    runs, whole = [], []
    for _ in range(a.repeats):
        out = subprocess.run([sys.executable, "-c", PHASES, a.target, a.draft], check=True, capture_output=True, text=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "jobs.cli", "generate", "--prompt", "Why is the sky blue?", "--target",
                        a.target, "--draft", a.draft, "--max-new-tokens", "1"], check=True, capture_output=True)
        whole.append(time.perf_counter() - t)
    print(f"specsweep generate start-up, {a.target} + {a.draft}, {a.repeats} fresh processes (median [min, max] s)")
    total = [sum(r.values()) for r in runs]
    for name in runs[0]:
        xs = [r[name] for r in runs]
        print(f"  {name:<36} {statistics.median(xs):6.2f} [{min(xs):.2f}, {max(xs):.2f}]")
    print(f"  {'sum of phases':<36} {statistics.median(total):6.2f} [{min(total):.2f}, {max(total):.2f}]")
    print(f"  {'whole command (interpreter start too)':<36} {statistics.median(whole):6.2f} [{min(whole):.2f}, {max(whole):.2f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
