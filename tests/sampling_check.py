"""Exact target distribution of the first tokens, and a chi-square test against samples."""
from __future__ import annotations

import itertools

import numpy as np
import torch
from scipy.stats import chi2

from actors.core.acceptance import warp

# Sampled generations per distribution test. Enough power: with 1200 runs the tests that swap in a wrong
# acceptance rule (test_lossless_sampling, test_trees) reject it at p < 1e-6, while the correct rule must
# only stay above 1e-3 (measured 2026-11-25: at 1000 runs the broken tree-sibling rule is no longer rejected at 1e-6).
SAMPLED_RUNS = 1200


@torch.no_grad()
def exact_joint(target, prompt, n_tokens, temperature, top_p=1.0):
    """{(t1, ..., tn): probability} under target-only sampling, enumerated."""
    vocab = target.get_output_embeddings().weight.shape[0]
    probs = {}
    for seq in itertools.product(range(vocab), repeat=n_tokens):
        ids = torch.tensor([list(prompt) + list(seq[:-1])])
        logits = target(input_ids=ids).logits[0, len(prompt) - 1:]
        p = warp(logits, temperature, top_p)
        probs[seq] = float(np.prod([p[i, t].item() for i, t in enumerate(seq)]))
    return probs


def chi_square_pvalue(samples, probs, min_expected=5.0):
    n = len(samples)
    counts = {}
    for s in samples:
        counts[tuple(s)] = counts.get(tuple(s), 0) + 1
    obs, exp, rest_o, rest_e = [], [], 0, 0.0
    for seq, p in probs.items():
        e = p * n
        if e >= min_expected:
            obs.append(counts.get(seq, 0))
            exp.append(e)
        else:
            rest_o += counts.get(seq, 0)
            rest_e += e
    if rest_e > 0:
        obs.append(rest_o)
        exp.append(rest_e)
    obs, exp = np.asarray(obs, float), np.asarray(exp, float)
    stat = float(((obs - exp) ** 2 / exp).sum())
    return float(chi2.sf(stat, len(obs) - 1))


def sample_runs(engine, policy, prompt, n_tokens, runs, temperature=1.0, top_p=1.0, seed0=0):
    return [engine.generate(prompt, policy, max_new_tokens=n_tokens, temperature=temperature, top_p=top_p,
                            seed=seed0 + i).token_ids for i in range(runs)]
