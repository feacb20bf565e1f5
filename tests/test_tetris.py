"""Tetris as its paper and public code define it (``policies/batch.py``): ``tetris:base=K,extra=E`` drafts K + E per
row, verifies the K·B best candidates by Π q, is off below two rows, refuses sampling and the old ``per_row`` form in
one line; the padding a padded batch forward adds is recorded per row (``Generation.pad_slots``)."""
from __future__ import annotations

import math

import pytest

from actors.drafting.drafters import ModelDrafter
from actors.core.engine import SpecEngine
from actors.loading.tiny_pair import llama, perturbed, sharpen
from jobs.config import parse_config
from policies.errors import SpecsweepError
from policies.registry import build


def _by_the_code(capacity: int, q_rows: list[list[float]]) -> list[int]:
    """Tetris's select_proposals_no_priority (vllm/spec_decode/tetris.py) worked by hand: cumulative log q per row,
    the top-`capacity` flat indices, each row's furthest chosen position (scatter_max)."""
    flat = [(sum(math.log(q) for q in qs[: i + 1]), b, i) for b, qs in enumerate(q_rows) for i in range(len(qs))]
    best = sorted(flat, key=lambda c: (-c[0], c[1], c[2]))[:capacity]
    keep = [0] * len(q_rows)
    for _, b, i in best:
        keep[b] = max(keep[b], i + 1)
    return keep


def test_select_is_select_proposals_no_priority_with_capacity_k_times_b():
    """spec_decode_worker.py: capacity = (proposal_len − extra) · B = K·B; here K = 2, B = 3: 6 of 12 candidates."""
    q = [[0.9, 0.8, 0.7, 0.2], [0.6, 0.99, 0.5, 0.9], [0.3, 0.9, 0.9, 0.9]]
    pol = build("tetris:base=2,extra=2", 7)
    assert pol.caps([9, 9, 9]) == [4, 4, 4]                                   # K + E drafted per row
    # Π q: row 0 .9 .72 .504 .1008; row 1 .6 .594 .297 .2673; row 2 .3 .27 .243 .2187 → best 6: .9 .72 .6 .594 .504 .3
    assert pol.select(q) == _by_the_code(6, q) == [3, 2, 1]


def test_off_below_two_rows_drafts_plain_k():
    """--tetris-turn-on-batch-size 2 in Tetris's run scripts: at B = 1 the extra lookahead is taken back."""
    pol = build("tetris:base=3,extra=2", 7)
    assert pol.caps([9]) == [3] and pol.select([[0.1, 0.1, 0.1]]) == [3]
    assert build("tetris", 5).caps([9, 9]) == [7, 7]                        # base defaults to the initial γ, extra 2


def test_old_form_and_bad_values_are_one_line():
    with pytest.raises(SpecsweepError, match="base=K,extra=E"):
        build("tetris:per_row=2", 4)
    with pytest.raises(SpecsweepError, match="extra"):
        build("tetris:extra=-1", 4)


def _pair():
    target = sharpen(llama(vocab=40, seed=40))
    return target, perturbed(target, 0.3, seed=41)


def test_sampling_is_refused_in_one_line(tmp_path):
    target, draft = _pair()
    with pytest.raises(SpecsweepError, match="greedy decoding only"):
        SpecEngine(target, ModelDrafter(draft)).generate_batch([[1, 2], [3]], build("tetris", 3), max_new_tokens=4,
                                                              temperature=1.0)
    raw = {"name": "t", "output": str(tmp_path / "o"), "pairs": [{"name": "p", "target": "t", "draft": "d"}],
           "generation": {"temperature": 0.7}, "policies": ["fixed", "tetris"], "gammas": [2]}
    with pytest.raises(SpecsweepError, match="tetris is defined for greedy decoding only"):
        parse_config(raw)


def test_a_padded_batch_records_its_padding_and_stays_lossless():
    """Two rows, capacity K·B: the rows verify different lengths, the batch forward pads the shorter one."""
    target, draft = _pair()
    prompts = [[1, 2, 3], [7, 8]]
    refs = [SpecEngine(target).generate(p, build("ar"), max_new_tokens=16).token_ids for p in prompts]
    outs = SpecEngine(target, ModelDrafter(draft)).generate_batch(prompts, build("tetris:base=2,extra=3", 2),
                                                                  max_new_tokens=16)
    assert [o.token_ids for o in outs] == refs
    for o in outs:
        assert o.pad_slots == sum(s.batch_width - 1 - s.drafted for s in o.steps) >= 0
    assert sum(o.pad_slots for o in outs) > 0 and all(s.drafted <= 5 for o in outs for s in o.steps)
    first = [o.steps[0] for o in outs]
    assert sum(s.drafted for s in first) <= 2 * 2                              # K·B verified
    alone = SpecEngine(target, ModelDrafter(draft)).generate(prompts[0], build("tetris:base=2,extra=3", 2),
                                                              max_new_tokens=16)
    assert alone.pad_slots == 0 and max(alone.drafted) <= 2                    # off at B = 1: plain K
