"""Policy decisions on scripted step outcomes, expected values worked out by hand."""
import pytest
from hypothesis import given, settings, strategies as st

from policies import DISCARD, MORE, STOP, GenerationContext, build
from tests.helpers import ctx, out, run
from policies.errors import SpecsweepError
from policies.threshold import roc_best_threshold, roc_curve
import numpy as np

def test_fixed_and_ar():
    assert run(build("fixed", 5), [out(5, 0), out(5, 5)]) == [5, 5, 5]
    assert run(build("ar", 1), [out(0, 0)]) == [0, 0]


def test_hf_heuristic():
    assert run(build("hf-heuristic", 4), [out(4, 4), out(6, 2), out(5, 0), out(4, 4), out(6, 6)]) == [4, 6, 5, 4, 6, 8]
    assert run(build("hf-heuristic", 1), [out(1, 0), out(1, 1)]) == [1, 1, 3]


def test_hf_heuristic_reset_and_persist():
    p = build("hf-heuristic", 4)
    run(p, [out(4, 4)])
    p.reset(ctx())
    assert p.max_draft() == 4
    q = build("hf-heuristic:persist=true", 4)
    run(q, [out(4, 4)])
    q.reset(ctx())
    assert q.max_draft() == 6


def test_threshold_stop():
    p = build("threshold", 6)
    p.reset(ctx())
    assert p.max_draft() == 6
    assert [p.after_draft(1, 0, 0.9, 0.9), p.after_draft(2, 0, 0.4, 0.5), p.after_draft(3, 0, 0.39, 0.5)] == [MORE, MORE, STOP]


def test_threshold_adaptive_roc():
    p = build("threshold:adaptive=true", 4)
    p.reset(ctx())
    # .9 .8 .7 accepted, .3 rejected: 4 samples, not more than 5 → τ stays .4 (transformers' rule)
    p.update(out(4, 3, [0.9, 0.8, 0.7, 0.3]))
    assert p.tau == 0.4
    # .85 .6 accepted, .5 rejected: 7 samples, P = 5, N = 2. The cut at .6 has TPR 1, FPR 0: cost 0
    p.update(out(3, 2, [0.85, 0.6, 0.5]))
    assert p.tau == 0.6
    assert p.after_draft(1, 0, 0.55, 0.9) == STOP and p.after_draft(1, 0, 0.65, 0.9) == MORE
    p.reset(ctx())
    assert p.tau == 0.4


def test_roc_tie_breaks_to_highest_threshold():
    # cost at .7 (TPR .5, FPR 0) = 1.5; at .5 (TPR 1, FPR .5) = .5; at .2 (TPR 1, FPR 1) = 1
    assert roc_best_threshold(np.array([0.7, 0.5, 0.5, 0.2]), np.array([1, 1, 0, 0])) == 0.5
    assert roc_best_threshold(np.array([0.7, 0.5]), np.array([1, 1])) is None
    # a positive scored below every negative: .9 costs .5 + 3 = 3.5, .8 costs 1 + 3 = 4, .1 costs 1 + 0 = 1
    assert roc_best_threshold(np.array([0.9, 0.8, 0.1]), np.array([0, 0, 1])) == 0.1


def test_roc_curve_drops_intermediate_points_like_scikit_learn():
    # counts (FP, TP) at .9 .8 .7 .6 = (0,1) (0,2) (0,3) (1,3): (0,2) lies midway on a straight run → dropped
    fpr, tpr, thr = roc_curve(np.array([1, 1, 1, 0]), np.array([0.9, 0.8, 0.7, 0.6]))
    assert thr.tolist() == [np.inf, 0.9, 0.7, 0.6]
    assert fpr.tolist() == [0, 0, 0, 1] and tpr.tolist() == pytest.approx([0, 1 / 3, 1, 1])


def _brute_force_threshold(scores, labels, w=3.0):
    """Try +inf and every distinct score t (predict positive iff score >= t); first minimum, highest t."""
    pos, neg = sum(labels), len(labels) - sum(labels)
    best, arg = None, None
    for t in [float("inf")] + sorted(set(scores), reverse=True):
        tp = sum(1 for s, y in zip(scores, labels) if s >= t and y)
        fp = sum(1 for s, y in zip(scores, labels) if s >= t and not y)
        cost = fp / neg + w * (1 - tp / pos)          # the same float operations as FPR + 3·(1 − TPR)
        if best is None or cost < best:
            best, arg = cost, t
    return arg


def test_roc_best_threshold_matches_brute_force_and_scikit_learn():
    rng = np.random.default_rng(0)
    try:
        from sklearn.metrics import roc_curve as sk_roc_curve
    except ImportError:                                # optional: the brute force is always checked
        sk_roc_curve = None
    for case in range(600):
        n = int(rng.integers(2, 40))
        scores = np.round(rng.uniform(0, 1, n), int(rng.integers(1, 4)))      # ties on coarse grids
        labels = (rng.uniform(0, 1, n) < scores * rng.uniform(0.5, 1.5)).astype(int)
        if labels.min() == labels.max():
            continue
        got = roc_best_threshold(scores, labels)
        assert got == _brute_force_threshold(scores.tolist(), labels.tolist()), case
        if sk_roc_curve is not None:
            fpr, tpr, thr = sk_roc_curve(labels, scores)
            assert got == thr[int(np.argmin(fpr + 3 * (1 - tpr)))], case
            ours = roc_curve(labels, scores)
            assert all(np.array_equal(a, b) for a, b in zip(ours, (fpr, tpr, thr))), case


def test_adaptive_threshold_follows_transformers_rule_step_by_step():
    """The policy's τ after every step equals transformers' update_candidate_strategy on the same history."""
    rng = np.random.default_rng(1)
    for _ in range(30):
        p = build("threshold:adaptive=true", 6)
        p.reset(ctx())
        probs, matches, tau = [], [], 0.4
        for _ in range(int(rng.integers(1, 25))):
            k = int(rng.integers(1, 7))
            n = int(rng.integers(0, k + 1))
            qs = np.round(rng.uniform(0, 1, k), 2).tolist()
            p.update(out(k, n, qs))
            probs.extend(qs)                       # transformers: probs of every drafted token …
            matches.extend([1] * n)                # … matches: 1 per accepted, then one 0 if any was rejected
            if len(probs) > len(matches):
                matches.append(0)
            del probs[len(matches):]
            if len(probs) > 5 and {0, 1} <= set(matches):
                tau = _brute_force_threshold(probs, matches)
            assert p.tau == tau


def test_gammatune_ema():
    # γ̄: 4 → .7·4+.3·6 = 4.6 (γ 5) → .7·4.6+.3·1 = 3.52 (4) → .7·3.52 = 2.464 (3) → .7·2.464+.3·5 = 3.2248 (4)
    p = build("gammatune", 4)
    assert run(p, [out(4, 4), out(5, 1), out(4, 0), out(3, 3)]) == [4, 5, 4, 3, 4]
    assert p.gamma_bar == pytest.approx(3.2248)


def test_gammatune_clip_and_params():
    p = build("gammatune", 10)
    assert run(p, [out(10, 10)]) == [10, 10]          # .7·10 + .3·12 = 10.6 → clipped to 10
    q = build("gammatune:eta=0.5,delta=0,gamma_min=2", 4)
    assert run(q, [out(4, 0), out(2, 0)]) == [4, 2, 2]  # .5·4 = 2 → 2; .5·2 = 1 → clipped to 2


def test_gammatune_drafts_a_large_initial_gamma_first_then_clips():
    # Alg. 1: the first step drafts γ0 = 24 as given; the update clips γ̄ = .7·24 + .3·3 = 17.7 to γmax = 10
    for spec in ("gammatune", "gammatune+", "gammatune:expand=jump"):
        p = build(spec, 24)
        assert run(p, [out(24, 3), out(10, 10)]) == [24, 10, 10], spec
        assert p.gamma_bar == pytest.approx(10.0)
    assert run(build("gammatune:gamma_min=3", 1), [out(1, 0)]) == [1, 3]     # γ0 below γmin also drafts as given


def test_gammatune_jump_reading():
    # full acceptance: next γ = A + δ = 6 while γ̄ = .7·4 + .3·4 = 4; then .7·4 + .3·1 = 3.1 → 4
    assert run(build("gammatune:expand=jump", 4), [out(4, 4), out(6, 1)]) == [4, 6, 4]


def test_gammatune_plus_stops_on_confidence():
    p = build("gammatune+", 4)
    p.reset(ctx())
    assert p.after_draft(1, 0, 0.5, 0.5) == MORE and p.after_draft(2, 0, 0.2, 0.3) == STOP
    assert run(p, [out(4, 4)]) == [4, 5]


def test_a_draft_stopped_short_of_k_max_never_expands():
    # GammaTune Eq. 7 / Alg. 1 line 1 expand when A = γ (the step's cap), transformers' heuristic when
    # num_matches == num_assistant_tokens: 2 of 2 drafts accepted under a cap of 4 is not a full window.
    # gammatune+: γ̄ = .7·4 + .3·2 = 3.4 (with the expansion, A = 2 + δ = 4 and γ̄ would stay 4.0)
    p = build("gammatune+", 4)
    assert run(p, [out(2, 2, k_max=4)]) == [4, 4] and p.gamma_bar == pytest.approx(3.4)
    assert run(build("hf-heuristic", 4), [out(3, 3, k_max=4)]) == [4, 3]       # cut near max_new_tokens: γ − 1
    assert run(build("gammatune", 4), [out(4, 4, k_max=4)]) == [4, 5]          # the full window still expands


def test_gammatune_plus_reads_the_top_probability_by_default():
    # a sampled proposal with q(x) = .2 where the draft's top probability is .6: GammaTune §4.2 tests the top
    # probability (.6 >= .4: draft on); stop_on=token tests q(x) (.2 < .4: stop)
    top, token = build("gammatune+", 4), build("gammatune+:stop_on=token", 4)
    top.reset(ctx())
    token.reset(ctx())
    assert top.after_draft(1, 0, 0.2, 0.6) == MORE and token.after_draft(1, 0, 0.2, 0.6) == STOP
    assert top.after_draft(1, 0, 0.35, 0.35) == STOP and token.after_draft(1, 0, 0.6, 0.9) == MORE
    assert top.params()["stop_on"] == "max" and token.params()["stop_on"] == "token"
    with pytest.raises(SpecsweepError, match="stop_on"):
        build("gammatune+:stop_on=entropy", 4)


def test_gt_discards_the_first_token_below_c():
    p = build("gt:c=0.2", 4)
    p.reset(ctx())
    assert p.max_draft() == 32
    # α̂: .9, .45, .18 ≤ .2 → discard
    assert [p.after_draft(1, 0, 0.9, 0.9), p.after_draft(2, 0, 0.5, 0.5), p.after_draft(3, 0, 0.4, 0.4)] == [MORE, MORE, DISCARD]
    p.max_draft()   # a new step restarts the product
    assert p.after_draft(1, 0, 0.25, 0.25) == MORE
    e = build("gt:c=0.2,eps=0.05", 4)
    e.reset(ctx())
    e.max_draft()
    assert [e.after_draft(i + 1, 0, q, q) for i, q in enumerate([0.9, 0.5, 0.4, 0.5])] == [MORE, MORE, MORE, DISCARD]


def test_gt_auto_reads_measured_c():
    p = build("gt", 4)
    p.reset(ctx())
    assert p.c == pytest.approx(0.1)     # 0.01 / 0.1
    with pytest.raises(SpecsweepError):
        p.reset(GenerationContext(costs=None))


def test_oracle_follows_the_reference():
    p = build("oracle", 1)
    c = ctx(reference=[5, 6, 7, 8])
    p.reset(c)
    assert p.max_draft() == 3
    assert [p.after_draft(1, 5, 1, 1), p.after_draft(2, 6, 1, 1), p.after_draft(3, 9, 1, 1)] == [MORE, MORE, DISCARD]
    c.generated = 2
    assert p.max_draft() == 1 and p.after_draft(1, 7, 1, 1) == MORE


def test_goodput_decisions():
    p = build("goodput", 4)
    # after 4/4 accepted every estimate is 1: (1 + k)/(.01k + T_v(k+1)) grows to the cap
    assert run(p, [out(4, 4)]) == [4, 16]
    # after 0/4 the first-position estimate is 0: every k >= 1 yields 1 token, the shortest step wins
    assert run(build("goodput", 4), [out(4, 0)]) == [4, 1]
    # fresh estimates 0.5: rates 13.64, 14.58, 14.42 for k = 1, 2, 3 → 2 (worked in docs/policies.md)
    q = build("goodput", 4)
    q.reset(ctx())
    q.trials[:] = 0
    expected = 1 + np.r_[0, np.cumsum(np.cumprod(q.estimates()))]
    assert q.estimates()[0] == 0.5 and expected[2] == 1.75


@pytest.mark.parametrize("spec,msg", [
    ("nope", "valid policies are"), ("gammatune:eta=0", "eta"), ("gammatune:eta=1.5", "eta"),
    ("gammatune:gamma_min=5,gamma_max=3", "gamma_min=5 exceeds"), ("threshold:tau=2", "tau"),
    ("gammatune:delta=-1", "delta"), ("gt:cap=0", "cap"), ("gt:c=1.5", "c="), ("fixed:foo=1", "unknown parameter"),
    ("threshold:adaptive=maybe", "adaptive"), ("gammatune:eta", "key=value"),
])
def test_bad_policy_specs(spec, msg):
    with pytest.raises(SpecsweepError, match=msg):
        build(spec, 4)


def test_bad_gamma():
    with pytest.raises(SpecsweepError, match="gamma"):
        build("fixed", 0)


SPECS = ["fixed", "hf-heuristic", "hf-heuristic:persist=true", "threshold", "threshold:adaptive=true", "gammatune",
         "gammatune:expand=jump", "gammatune+", "gt:c=0.1", "goodput", "oracle", "ar"]


@settings(max_examples=60, deadline=None)
@given(spec=st.sampled_from(SPECS), gamma=st.integers(1, 24),
       steps=st.lists(st.tuples(st.integers(0, 24), st.integers(0, 24), st.floats(0, 1)), max_size=30))
def test_k_max_stays_in_bounds(spec, gamma, steps):
    p = build(spec, gamma)
    p.reset(ctx(reference=list(range(50))))
    updated = False                       # gammatune: γ0 as given until the first update with drafts (Alg. 1)
    for i, (k, n, q) in enumerate(steps):
        k_max = p.max_draft()
        assert isinstance(k_max, int) and k_max >= 0
        if p.name not in ("ar", "oracle", "gt"):
            assert k_max >= 1
        if p.name.startswith("gammatune"):
            assert p.gamma_min <= k_max <= p.gamma_max if updated else k_max == gamma
        if p.name == "hf-heuristic" and not p.persist:
            assert k_max <= gamma + 2 * i
        if p.name in ("goodput", "gt", "oracle"):
            assert k_max <= p.cap
        k = min(k, k_max)
        p.update(out(k, min(n, k), [q] * k))
        updated = updated or k > 0


@settings(max_examples=30, deadline=None)
@given(spec=st.sampled_from([s for s in SPECS if "persist" not in s]), gamma=st.integers(1, 24),
       steps=st.lists(st.tuples(st.integers(1, 24), st.integers(0, 24)), min_size=1, max_size=10))
def test_state_resets_between_generations(spec, gamma, steps):
    p = build(spec, gamma)
    p.reset(ctx(reference=list(range(50))))
    first = p.max_draft()
    for k, n in steps:
        p.update(out(k, min(n, k), [0.3] * k))
    p.reset(ctx(reference=list(range(50))))
    assert p.max_draft() == first


