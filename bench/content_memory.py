"""Does a head read a passage, or remember the training pool's? The same reading tasks over passages of the
instruction pool (which every varied-pool head trained on met hundreds of times) and over new passages written for
this benchmark (in no training set), one run, greedy, chat template:

    python -m bench.content_memory [--target smollm2-135m] [--heads smollm2-135m-eagle3 eagle3:PATH ...]
                                   [--gamma 6] [--max-new-tokens 64]      # ~3 min a head on 2 cores

For each head: the mean accepted length (bonus counted) of `fixed` γ on each passage set with a 95 % bootstrap
interval over prompts, and new / pool with an interval (the two sets resampled independently). A ratio well below 1
says the head's acceptance on the pool's reading tasks is memorised content, not reading; docs/drafters.md,
"Training text and memorised content", has the measurement. Every output is checked against the target alone.
"""
from __future__ import annotations

import argparse
import random
import sys

import numpy as np

from actors.loading.instruction_pool.reading import PASSAGES
from actors.loading.templates import default_template, render
from actors.pair import Pair, PairConfig
from jobs.report.intervals import bootstrap_weights, percentile_interval
from policies.registry import build

# Written for this benchmark: in no training prompt set, no six-word run shared with the pool or the sample
# questions (tests/test_content_memory.py).
NEW_PASSAGES = [
    "A ferry company has added an electric boat to its route across the lake. The boat charges at each pier in ten "
    "minutes and carries up to eighty passengers. The company plans to replace its two diesel ferries within five "
    "years if the first boat proves reliable in winter.",
    "The village council voted to turn an empty car park into a community garden. Residents will be able to rent "
    "small plots for a low yearly fee, and a local school will use two beds for science lessons. Work on the soil "
    "and fences starts next month.",
    "A study of 400 commuters found that people who cycled to work took fewer sick days than those who drove. The "
    "researchers noted that cyclists also reported better sleep, although they could not rule out that healthier "
    "people were simply more likely to cycle.",
    "An old cinema in the town centre reopened after a two-year restoration. The original ceiling paintings were "
    "cleaned, the seats were replaced, and a small cafe was added in the foyer. Tickets for the first week sold out "
    "within a day.",
    "Beekeepers in the valley reported a poor honey harvest this summer. A cold, wet spring kept the bees inside "
    "their hives for weeks, so they gathered less nectar. Some beekeepers fed their colonies sugar syrup to help them "
    "survive until autumn.",
    "A regional airline will stop flying between the two northern cities in March because too few seats were sold. "
    "Travellers will instead be offered a new express bus that takes about three hours and leaves four times a day.",
    "Volunteers planted eleven thousand trees along the river last weekend. The trees, mostly willow and alder, are "
    "meant to hold the riverbank together and reduce flooding. Organisers said more than six hundred people took "
    "part, including many families with young children.",
    "A museum has started lending small telescopes to visitors, the same way a library lends books. Each telescope "
    "comes with a short guide to the night sky. The museum says the waiting list already has more than two hundred "
    "names.",
    "A primary school replaced its paper timetables with a single screen in the entrance hall. Parents can now check "
    "changes to lessons and trips each morning, and the school says it saves about forty thousand sheets of paper a "
    "year.",
    "Engineers have finished testing a new footbridge over the railway line. The bridge is made of recycled steel, "
    "has a ramp for wheelchairs and bicycles, and will open to the public on the first Saturday of next month.",
    "A chess club for pensioners meets every Thursday in the back room of a bakery. It began with four players and "
    "now has thirty, and last year two members reached the final of the regional tournament.",
    "After a dry summer, the town's reservoir fell to a third of its usual level. The water company has asked "
    "residents not to water gardens or wash cars, and it is repairing leaks in the oldest pipes.",
]
FRAMES = ["Summarize in one sentence: {p}", "Use the passage to answer. Passage: {p} Question: {q}",
          "Give a TL;DR of this text: {p}", "Read the following text and answer: {q}\n\n{p}"]
QUESTIONS = ["What is the main point of the text?", "Who is affected, and how?"]


def prompts(passages: list[str]) -> list[str]:
    """Every frame around every passage (the question alternating with the passage and frame)."""
    return [f.format(p=p, q=QUESTIONS[(i + j) % 2]) for i, p in enumerate(passages) for j, f in enumerate(FRAMES)]


def pool_passages(n: int, seed: int = 0) -> list[str]:
    return [p for p, _ in random.Random(seed).sample(PASSAGES, n)]


def mal_samples(sums: np.ndarray, steps: np.ndarray, seed: int) -> np.ndarray:
    """Bootstrap resamples (over prompts) of the pooled mean accepted length."""
    w = bootstrap_weights(len(sums), seed=seed)
    return (w @ sums) / (w @ steps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--heads", nargs="+", default=["smollm2-135m-eagle3"], help="shipped head names or eagle3:PATH / "
                    "eagle:PATH")
    ap.add_argument("--gamma", type=int, default=6)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    a = ap.parse_args()
    sets = {"new": prompts(NEW_PASSAGES), "pool": prompts(pool_passages(len(NEW_PASSAGES)))}
    ar = Pair(PairConfig(target=a.target, draft=None))
    tmpl = default_template(a.target, ar.tokenizer)
    ids = {k: [render(tmpl, ar.tokenizer, [{"role": "user", "content": t}]) for t in v] for k, v in sets.items()}
    reference = {k: [ar.engine.generate(p, build("ar"), max_new_tokens=a.max_new_tokens).token_ids for p in v]
                 for k, v in ids.items()}
    print(f"# content memory {a.target}: {len(NEW_PASSAGES)} new passages vs {len(NEW_PASSAGES)} pool passages, "
          f"{len(FRAMES)} reading tasks each, fixed γ={a.gamma}, greedy, {a.max_new_tokens} tokens")
    print(f"{'head':32s} {'MAL new':>8s} {'95 %':>14s} {'MAL pool':>9s} {'95 %':>14s} {'new/pool':>9s} {'95 %':>14s}"
          "  lossless")
    for head in a.heads:
        pair = Pair(PairConfig(target=a.target, draft=head))
        row, draws, lossless = [], [], True
        for seed, (k, v) in enumerate(ids.items()):
            sums, steps = [], []
            for i, p in enumerate(v):
                g = pair.engine.generate(p, build("fixed", a.gamma), max_new_tokens=a.max_new_tokens)
                lossless &= g.token_ids == reference[k][i]
                sums.append(sum(g.accept_lengths))
                steps.append(len(g.accept_lengths))
                print(f"[content_memory] {head} {k} {i + 1}/{len(v)}", file=sys.stderr, flush=True)
            sums, steps = np.array(sums, float), np.array(steps, float)
            draws.append(mal_samples(sums, steps, seed))
            lo, hi = percentile_interval(draws[-1])
            row.append((sums.sum() / steps.sum(), lo, hi))
        ratio = row[0][0] / row[1][0]
        rlo, rhi = percentile_interval(draws[0] / draws[1])
        cells = " ".join(f"{m:8.2f} {f'[{lo:.2f}, {hi:.2f}]':>14s}" for m, lo, hi in row)
        print(f"{head[:32]:32s} {cells} {ratio:9.2f} {f'[{rlo:.2f}, {rhi:.2f}]':>14s}  {lossless}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
