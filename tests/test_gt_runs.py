"""``gt``'s look-ahead stop (``ahead``, policies/gt.py): off by default, verifies GT's tokens at q̂ = 1 with fewer
draft forwards, stops earlier at q̂ < 1, refuses bad values in one line, and stays lossless and replayable."""
import random

import pytest

from actors.core.engine import SpecEngine
from actors.drafting.drafters import ModelDrafter
from actors.loading.tiny_pair import llama, perturbed, sharpen
from actors.rollouts import record_trace
from actors.tracing.replay import replay
from jobs.tune.cli import parse_grid
from policies.base import DISCARD, MORE, STOP
from policies.costs import CostModel
from policies.errors import SpecsweepError
from policies.fixed import TargetOnly
from policies.registry import build
from tests.helpers import ctx

# a verify table with a jump (tokens 2 and 4 dear) so the prices differ from token to token
JUMPY = CostModel.measured(t_draft=0.01, t_verify={1: 0.1, 2: 0.1, 3: 0.14, 4: 0.14, 5: 0.2, 8: 0.2, 16: 0.3})


def draft(policy, qs, costs=JUMPY):
    """Run one step's drafting on scripted q's: (verdict, proposals made, tokens verified)."""
    policy.reset(_ctx(costs))
    cap = policy.max_draft()
    for i, q in enumerate(qs[:cap], 1):
        v = policy.after_draft(i, 0, q, q, 0.0)
        if v != MORE:
            return v, i, i - 1 if v == DISCARD else i
    n = min(len(qs), cap)
    return MORE, n, n


def _ctx(costs):
    c = ctx()
    c.costs = costs
    return c


def old_rule(policy, qs):
    """GT as it was before ``ahead`` (Eq. 5, the first failing token not verified)."""
    alpha = 1.0
    for i, q in enumerate(qs[:policy.cap], 1):
        alpha *= q
        if not alpha > policy.price(i) - policy.eps:
            return DISCARD, i, i - 1
    n = min(len(qs), policy.cap)
    return MORE, n, n


def scripts(n=300, seed=0):
    rng = random.Random(seed)
    return [[rng.choice([rng.random(), 1 - rng.random() ** 4]) for _ in range(rng.randint(1, 12))] for _ in range(n)]


@pytest.mark.parametrize("spec", ["gt", "gt:eps=0.1", "gt:cap=3"])
def test_default_is_todays_rule(spec):
    p = build(spec, 4)
    assert p.ahead == 0.0 and p.params()["ahead"] == 0.0
    for qs in scripts():
        assert draft(p, qs) == old_rule(p, qs), qs


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_ahead_one_verifies_gt_tokens_with_fewer_drafts(eps):
    base, look = build(f"gt:eps={eps}", 4), build(f"gt:eps={eps},ahead=1", 4)
    saved = 0
    for qs in scripts(seed=1):
        _, p0, k0 = draft(base, qs)
        v1, p1, k1 = draft(look, qs)
        assert k1 == k0, qs                       # the same tokens verified
        assert p1 <= p0, qs                       # never more draft forwards
        saved += p0 - p1
        if v1 == STOP:                            # stopped exactly where no q could let token i + 1 pass
            alpha = 1.0
            for q in qs[:p1]:
                alpha *= q
            assert alpha <= look.price(p1 + 1) - eps
    assert saved > 0                              # the scripts do hit a sure discard


def test_ahead_below_one_stops_where_its_rule_says():
    look, full = build("gt:ahead=0.5", 4), build("gt:ahead=1", 4)
    look.reset(_ctx(JUMPY))
    full.reset(_ctx(JUMPY))
    q1 = look.price(2) + 0.01               # passes token 1; token 2 could pass at q = 1, not at q = 0.5
    assert q1 > look.price(1) and q1 * 0.5 <= look.price(2) < q1
    assert look.after_draft(1, 0, q1, q1) == STOP
    assert full.after_draft(1, 0, q1, q1) == MORE
    low = look.price(1) / 2                 # a failing token is still not verified
    look.reset(_ctx(JUMPY))
    assert look.after_draft(1, 0, low, low) == DISCARD


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "inf", "x"])
def test_bad_ahead_is_one_line(value):
    with pytest.raises(SpecsweepError) as e:
        build(f"gt:ahead={value}", 4)
    msg = str(e.value)
    assert "\n" not in msg and "ahead" in msg and "in [0, 1]" in msg


def test_ahead_is_a_tune_axis():
    sets, _ = parse_grid("gt", "ahead=0:1:3")
    assert [s["ahead"] for s in sets] == [0.0, 0.5, 1.0]
    with pytest.raises(SpecsweepError, match="ahead"):
        parse_grid("gt", "ahead=0/2")


COSTS = CostModel.measured(t_draft=0.002, t_verify={1: 0.02, 2: 0.021, 4: 0.03, 8: 0.035, 16: 0.05, 32: 0.07})
PROMPT, MAX_NEW = [4, 9, 2, 7, 7, 1, 30, 12], 30


@pytest.fixture(scope="module")
def pair():
    target = sharpen(llama(vocab=70, seed=5))
    return target, perturbed(target, 0.3, seed=6)


@pytest.mark.parametrize("spec,plain", [("gt:ahead=1", "gt"), ("gt:c=0.05,ahead=0.5", "gt:c=0.05"),
                                        ("gt:c=0.02,ahead=0.3", "gt:c=0.02"), ("gt:ahead=0.2,eps=0.05", None)])
def test_lossless_and_replayable(pair, spec, plain):
    target, draft_model = pair
    engine = SpecEngine(target, ModelDrafter(draft_model), costs=COSTS)
    ar = SpecEngine(target).generate(PROMPT, TargetOnly(), max_new_tokens=MAX_NEW)
    live = engine.generate(PROMPT, build(spec, 3), max_new_tokens=MAX_NEW)
    assert live.token_ids == ar.token_ids
    trace = record_trace(engine, PROMPT, max_new_tokens=MAX_NEW, pair="tiny", tokenizer_hash="h1")
    rep = replay(trace, build(spec, 3), costs=COSTS)
    assert rep.token_ids == live.token_ids
    assert [(s.k_max, s.drafted, s.accepted, s.emitted, s.proposed) for s in rep.steps] == \
        [(s.k_max, s.drafted, s.accepted, s.emitted, s.proposed) for s in live.steps]
    if plain == "gt:c=0.02":                  # the look-ahead acts here: fewer draft forwards, tokens verified alike
        base = engine.generate(PROMPT, build(plain, 3), max_new_tokens=MAX_NEW)
        assert sum(s.proposed for s in live.steps) < sum(s.proposed for s in base.steps)
        assert sum(s.drafted for s in live.steps) > 0
