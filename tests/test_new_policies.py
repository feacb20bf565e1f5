"""svip, adaedl, dv-threshold, bandit, ema-steps: hand-worked scripted traces, bounds, reset,
replay equals live, and losslessness through the real engine."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from actors.drafting.drafters import ModelDrafter
from actors.core.engine import SpecEngine
from policies import DISCARD, MORE, STOP, GenerationContext, SequencePolicy, Step, build
from policies.costs import CostModel
from policies.ema_steps import EmaSteps
from policies.errors import SpecsweepError
from policies.registry import REGISTRY
from actors.loading.tiny_pair import llama, perturbed, sharpen
from tests.helpers import run

COSTS = CostModel.measured(t_draft=0.01, t_verify={1: 0.1, 2: 0.1, 4: 0.1, 8: 0.12, 16: 0.2})
NEW = ["svip", "adaedl", "dv-threshold", "bandit", "ema-steps"]


def ctx():
    return GenerationContext(costs=COSTS)


def out(k, n, emitted=None, draft_time=None, verify_time=0.1):
    return Step(k_max=k, drafted=k, accepted=n, q_tokens=[0.9] * k, emitted=n + 1 if emitted is None else emitted,
                       draft_time=0.01 * k if draft_time is None else draft_time, verify_time=verify_time)


def test_every_new_policy_is_registered_and_logs_every_parameter():
    for name in NEW:
        p = build(name, 4)
        assert p.name == name
        assert set(p.params()) == set(REGISTRY[name][1])
        assert p.params() == {k: prm.default for k, prm in REGISTRY[name][1].items()}


# ---- svip -------------------------------------------------------------------------------------

def test_svip_stops_after_the_high_entropy_draft():
    p = build("svip", 4)
    p.reset(ctx())
    assert p.max_draft() == 40                     # initial γ ignored, the code's cap of 40
    # √(0.15·H) > 0.3  ⇔  H > 0.6 nats: 0.59 → √0.0885 = 0.2975 (more); 0.61 → √0.0915 = 0.3025 (stop)
    assert [p.after_draft(1, 0, 0.9, 0.9, 0.0), p.after_draft(2, 0, 0.5, 0.5, 0.59),
            p.after_draft(3, 0, 0.5, 0.5, 0.61)] == [MORE, MORE, STOP]
    q = build("svip:c=1,h=1,cap=3", 4)            # H > 1 stops
    q.reset(ctx())
    assert q.max_draft() == 3
    assert q.after_draft(1, 0, 0.5, 0.5, 0.99) == MORE and q.after_draft(2, 0, 0.5, 0.5, 1.01) == STOP
    assert run(q, [out(3, 0), out(3, 3)]) == [3, 3, 3]   # stateless


# ---- dv-threshold -----------------------------------------------------------------------------

def test_dv_threshold_adapts_theta_over_steps():
    p = build("dv-threshold", 4)
    p.reset(ctx())
    assert p.max_draft() == 8 and p.theta == 0.8
    assert p.after_draft(1, 0, 0.95, 0.81) == MORE and p.after_draft(2, 0, 0.7, 0.79) == STOP
    # m: 0 → .5·0 + .5·(2/4) = .25 < .9 → θ' = .81, θ = .9·.8 + .1·.81 = .801
    p.update(out(4, 2))
    assert p.th.m == pytest.approx(0.25) and p.theta == pytest.approx(0.801)
    # m = .125 + .5·1 = .625 < .9 → θ' = .811, θ = .7209 + .0811 = .802
    p.update(out(3, 3))
    assert p.theta == pytest.approx(0.802)
    # m = .3125 + .5 = .8125 → θ = .803
    p.update(out(8, 8))
    assert p.theta == pytest.approx(0.803)
    # m = .40625 + .5 = .90625 ≥ .9 and k = 8 = cap → θ' = θ, θ stays .803
    p.update(out(8, 8))
    assert p.th.m == pytest.approx(0.90625) and p.theta == pytest.approx(0.803)
    # m = .453125 + .5 = .953125 ≥ .9, k = 2 < cap → θ' = .793, θ = .7227 + .0793 = .802
    p.update(out(2, 2))
    assert p.theta == pytest.approx(0.802)
    assert p.after_draft(1, 0, 0.9, 0.8025) == MORE and p.after_draft(2, 0, 0.9, 0.8015) == STOP
    p.update(out(0, 0))                            # nothing drafted: no information, nothing moves
    assert p.theta == pytest.approx(0.802) and p.th.m == pytest.approx(0.953125)
    p.reset(ctx())
    assert p.theta == 0.8 and p.th.m == 0.0
    fixed = build("dv-threshold:adaptive=false,theta=0.5,cap=3", 4)
    fixed.reset(ctx())
    fixed.update(out(3, 0))
    assert fixed.theta == 0.5 and fixed.max_draft() == 3


# ---- adaedl -----------------------------------------------------------------------------------

def test_adaedl_bound_discard_and_first_draft():
    p = build("adaedl", 4)
    p.reset(ctx())
    assert p.max_draft() == 8 and p.lam == 0.7
    # 1 − √(0.2·H) < 0.7  ⇔  H > 0.45: H = .44 → bound 1 − √.088 = .7034 (more); H = .46 → .6967 (fails)
    assert p.bound(0.44) == pytest.approx(1 - math.sqrt(0.088))
    assert p.after_draft(1, 0, 0.5, 0.5, 0.44) == MORE
    assert p.after_draft(1, 0, 0.5, 0.5, 0.46) == STOP        # the first draft is always verified
    assert p.after_draft(2, 0, 0.5, 0.5, 0.44) == MORE
    assert p.after_draft(2, 0, 0.5, 0.5, 0.46) == DISCARD     # later ones are dropped unverified
    assert p.after_draft(5, 0, 0.5, 0.5, 0.0) == MORE         # H = 0: bound 1


def test_adaedl_adapts_lambda_over_steps():
    p = build("adaedl", 4)
    p.reset(ctx())
    # m = .5 → λ' = .71, λ = .63 + .071 = .701
    p.update(out(4, 4))
    assert p.lam == pytest.approx(0.701)
    # m = .25 + .5 = .75 → λ = .6309 + .0711 = .702
    p.update(out(2, 2))
    assert p.lam == pytest.approx(0.702)
    # m = .375 + .5 = .875 → λ = .703
    p.update(out(8, 8))
    assert p.lam == pytest.approx(0.703)
    # m = .9375 ≥ .9, k = cap → unchanged
    p.update(out(8, 8))
    assert p.lam == pytest.approx(0.703)
    # m = .96875, k = 3 < cap → λ' = .693, λ = .6327 + .0693 = .702
    p.update(out(3, 3))
    assert p.lam == pytest.approx(0.702)
    # bound < .702 ⇔ √(.2H) > .298 ⇔ H > .298²/.2 = .44402
    assert p.after_draft(2, 0, 0.5, 0.5, 0.4435) == MORE and p.after_draft(2, 0, 0.5, 0.5, 0.4445) == DISCARD
    # a run of rejections pushes λ up: m = .484375 + 0 → λ' = .712, λ = .6318 + .0712 = .703
    p.update(out(3, 0))
    assert p.lam == pytest.approx(0.703)
    p.reset(ctx())
    assert p.lam == 0.7


# ---- bandit -----------------------------------------------------------------------------------

def bandit_reward(k, emitted, arms_max):
    """(emitted / (k·T_draft + T_verify(k + 1))) · T_verify(1) / (max arm + 1), COSTS worked by hand:
    T_verify(2) = T_verify(3) = .1, T_verify(5) = .1 + .02·(1/4) = .105."""
    t_verify = {1: 0.1, 2: 0.1, 3: 0.1, 5: 0.105}[k + 1]
    return emitted / (k * 0.01 + t_verify) * 0.1 / (arms_max + 1)


def test_bandit_warm_up_then_ucb1():
    p = build("bandit:arms=4/1/2", 4)               # arms sorted: 1, 2, 4
    assert p.params()["arms"] == "1/2/4"
    script = [out(1, 1), out(2, 0), out(4, 4), out(4, 1), out(1, 0)]
    seen = run(p, script)
    r1, r2, r4 = bandit_reward(1, 2, 4), bandit_reward(2, 1, 4), bandit_reward(4, 5, 4)   # .3636, .1667, .6897
    r4b, r1b = bandit_reward(4, 2, 4), bandit_reward(1, 1, 4)                            # .2759, .1818
    # warm-up 1, 2, 4; t = 3: equal bonuses √(2 ln 3) → the best mean, arm 4
    # t = 4: 1 → .3636 + √(2 ln 4) = 2.0287; 2 → .1667 + 1.6651 = 1.8318; 4 → .4828 + √(ln 4) = 1.6602 → arm 1
    # t = 5: 1 → .2727 + √(ln 5) = 1.5414; 2 → .1667 + √(2 ln 5) = 1.9608; 4 → .4828 + 1.2686 = 1.7514 → arm 2
    assert seen == [1, 2, 4, 4, 1, 2]
    assert p.total == pytest.approx([r1 + r1b, r2, r4 + r4b])
    assert p.index() == pytest.approx([(r1 + r1b) / 2 + math.sqrt(math.log(5)), r2 + math.sqrt(2 * math.log(5)),
                                       (r4 + r4b) / 2 + math.sqrt(math.log(5))])
    p.reset(ctx())
    assert p.max_draft() == 1 and p.t == 0 and p.plays == [0, 0, 0]


def test_bandit_shared_bonus_is_greedy_and_clock_reward():
    p = build("bandit:arms=1/2/4,explore=shared", 4)
    # means after the script: 1 → .3636 (then .2727), 2 → .1667, 4 → .6897 then .4828: arm 4 throughout
    assert run(p, [out(1, 1), out(2, 0), out(4, 4), out(4, 1), out(4, 4)]) == [1, 2, 4, 4, 4, 4]
    c = build("bandit:arms=1/2,reward=clock", 4)
    c.reset(ctx())
    c.max_draft()
    c.update(out(1, 1, draft_time=0.05, verify_time=0.15))        # 2 tokens / .2 s · .1 / 3
    assert c.total[0] == pytest.approx(2 / 0.2 * 0.1 / 3)
    with pytest.raises(SpecsweepError, match="cost calibration"):
        build("bandit", 4).reset(GenerationContext(costs=None))


def test_bandit_reward_uses_the_cut_emitted_count():
    p = build("bandit:arms=2", 4)
    p.reset(ctx())
    p.max_draft()
    p.update(out(2, 2, emitted=1))                  # EOS cut the step to one token
    assert p.total[0] == pytest.approx(1 / 0.12 * 0.1 / 3)


# ---- ema-steps --------------------------------------------------------------------------------

def test_ema_steps_warm_up_interval_and_hysteresis():
    p = build("ema-steps", 4)                       # 4 is not a candidate → the middle one, 5
    seen = run(p, [out(5, 5)] * 15)
    # ema_b = 5 − 0.8^b (starts at 4); no decision during the 10 warm-up steps; at b = 15:
    # ema = 5 − .8^15 = 4.9648 > 5 − .5 → up to 7 (the last candidate)
    assert seen == [5] * 15 + [7]
    assert p.ema == pytest.approx(5 - 0.8 ** 15)
    for _ in range(5):                               # five steps with nothing accepted: ema = 4.9648·.8^5 = 1.6269
        p.update(out(7, 0))
    # at b = 20: down from 7 while ema ≤ prev − .5 − .25: 4.25 yes, 2.25 yes, .25 no → 3
    assert p.max_draft() == 3 and p.ema == pytest.approx((5 - 0.8 ** 15) * 0.8 ** 5)
    for _ in range(5):                               # ema = .5331: above .25 (no drop), not above 2.5 (no rise)
        p.update(out(3, 0))
    assert p.max_draft() == 3
    for _ in range(4):
        p.update(out(3, 0))
    assert p.max_draft() == 3                        # b = 29: not a decision step
    p.update(out(3, 0))                              # b = 30: ema = .1747 ≤ .25 → 1
    assert p.max_draft() == 1
    p.reset(ctx())
    assert p.max_draft() == 5 and p.ema == 4.0 and p.count == 0


def test_ema_steps_start_zero_candidate_ceiling_and_persist():
    assert build("ema-steps", 3).max_draft() == 3    # a candidate initial γ is kept
    z = build("ema-steps:candidates=0/1/3,warmup=0,interval=1", 2)   # 2 is not a candidate → the middle one, 1
    assert z.k_min == 0 and z.max_draft() == 1 and z.ema == 0.0
    z.reset(ctx())
    z.update(out(1, 0))                              # ema 0 ≤ .5 − .25 → down to 0 (drafting off)
    assert z.max_draft() == 0
    z.update(out(0, 0))                              # γ = 0: ema untouched; probe the next candidate
    assert z.max_draft() == 1 and z.ema == 0.0
    cold = EmaSteps(0, candidates="0/1/3", warmup=0, interval=1)   # started at 0: ema = −1
    cold.reset(ctx())
    assert cold.max_draft() == 0 and cold.ema == -1.0
    cold.update(out(0, 0))                           # probe 1 with that step's neutral ema, 1 − 1 = 0
    assert cold.max_draft() == 1 and cold.ema == 0.0
    # ceiling: γ 5, ema .2·4 + .8·4 = 4 → no step; ceil(4·.5) = 2 → lowered to the largest candidate ≤ 2, i.e. 1
    c = build("ema-steps:warmup=0,interval=1,ceiling_coeff=0.5", 5)
    c.reset(ctx())
    c.update(out(5, 4))
    assert c.max_draft() == 1
    q = build("ema-steps:persist=true,warmup=0,interval=1", 5)
    q.reset(ctx())
    q.update(out(5, 5))                              # ema 4.2 ≤ 4.5: stays 5; then 4.36, …
    for _ in range(6):
        q.update(out(5, 5))
    assert q.max_draft() == 7
    q.reset(ctx())
    assert q.max_draft() == 7                        # carried into the next generation


@pytest.mark.parametrize("spec,msg", [
    ("svip:c=0", "c="), ("svip:cap=0", "cap"), ("adaedl:gamma_e=-1", "gamma_e"), ("adaedl:beta2=1", "beta2"),
    ("dv-threshold:target=2", "target"), ("dv-threshold:adaptive=maybe", "adaptive"), ("bandit:arms=0/2", "arms"),
    ("bandit:arms=a", "arms"), ("bandit:explore=eps", "explore"), ("bandit:reward=wall", "reward"),
    ("ema-steps:candidates=-1/2", "candidates"), ("ema-steps:alpha=0", "alpha"), ("ema-steps:interval=0", "interval"),
    ("adaedl:lam=1.5", r"lam='1\.5' is out of range: must be in \[0, 1\]"),
    ("dv-threshold:theta=-0.1", r"theta='-0\.1' is out of range: must be in \[0, 1\]"),
])
def test_bad_new_policy_specs(spec, msg):
    with pytest.raises(SpecsweepError, match=msg):
        build(spec, 4)


# ---- properties: bounds, reset, replay equals live ----------------------------------------------

SPECS = ["svip", "svip:cap=5", "adaedl", "adaedl:adaptive=false", "dv-threshold", "dv-threshold:cap=3", "bandit",
         "bandit:explore=shared", "bandit:reward=clock", "ema-steps", "ema-steps:warmup=0,interval=1",
         "ema-steps:candidates=0/2/4,warmup=1,interval=2"]
STEP = st.tuples(st.integers(0, 40), st.integers(0, 40), st.lists(st.floats(0, 3), min_size=1, max_size=8),
                 st.floats(0, 1))


def drive(p, steps):
    """Run scripted steps through a policy the way the engine does; returns every decision made."""
    decisions = []
    for k, n, entropies, q in steps:
        k_max = p.max_draft()
        decisions.append(("k_max", k_max))
        verified = 0
        for i in range(1, min(k, k_max) + 1):
            v = p.after_draft(i, i, q, q, entropies[i % len(entropies)])
            decisions.append((i, v))
            verified = i if v != DISCARD else i - 1
            if v != MORE:
                break
        p.update(Step(k_max=k_max, drafted=verified, accepted=min(n, verified), q_tokens=[q] * verified,
                      draft_time=0.01 * verified, verify_time=0.1, emitted=min(n, verified) + 1))
    return decisions


@settings(max_examples=80, deadline=None)
@given(spec=st.sampled_from(SPECS), gamma=st.integers(1, 24), steps=st.lists(STEP, max_size=40))
def test_k_max_stays_within_limits(spec, gamma, steps):
    p = build(spec, gamma)
    p.reset(ctx())
    for kind, value in drive(p, steps):
        if kind != "k_max":
            assert value in (MORE, STOP, DISCARD)
            if p.name != "adaedl":
                assert value != DISCARD
            continue
        assert isinstance(value, int) and value >= p.k_min
        if p.name in ("svip", "adaedl", "dv-threshold"):
            assert value == p.cap
        if p.name == "bandit":
            assert value in p.arms
        if p.name == "ema-steps":
            assert value in p.cands


@settings(max_examples=40, deadline=None)
@given(spec=st.sampled_from([s for s in SPECS if "persist" not in s]), gamma=st.integers(1, 24),
       first=st.lists(STEP, max_size=25), second=st.lists(STEP, max_size=25))
def test_state_resets_per_generation(spec, gamma, first, second):
    """A generation after any history decides exactly as a fresh policy does."""
    used = build(spec, gamma)
    used.reset(ctx())
    drive(used, first)
    used.reset(ctx())
    fresh = build(spec, gamma)
    fresh.reset(ctx())
    assert drive(used, second) == drive(fresh, second)


@settings(max_examples=40, deadline=None)
@given(spec=st.sampled_from([s for s in SPECS if "clock" not in s]), gamma=st.integers(1, 24),
       steps=st.lists(STEP, max_size=40))
def test_replay_with_other_timings_decides_the_same(spec, gamma, steps):
    """Decisions depend on the trace's numbers only, never on measured time (reward=model is the default)."""
    a, b = build(spec, gamma), build(spec, gamma)
    a.reset(ctx())
    b.reset(ctx())
    seen_a = drive(a, steps)

    class Jitter:   # same proposals and outcomes, different draft/verify times
        def __init__(self, p):
            self.p = p

        def __getattr__(self, k):
            return getattr(self.p, k)

        def update(self, o):
            o.draft_time, o.verify_time = o.draft_time * 3 + 0.5, o.verify_time / 7
            self.p.update(o)
    assert drive(Jitter(b), steps) == seen_a


# ---- through the engine -----------------------------------------------------------------------

ENGINE_COSTS = CostModel.measured(t_draft=0.002, t_verify={1: 0.02, 2: 0.021, 4: 0.022, 8: 0.025, 16: 0.03, 32: 0.05})
LIVE = ["svip", "svip:h=0.1", "adaedl", "adaedl:lam=0.9", "dv-threshold", "dv-threshold:theta=0.3", "bandit",
        "bandit:explore=shared", "bandit:reward=clock", "ema-steps", "ema-steps:warmup=2,interval=1",
        "ema-steps:candidates=0/1/3,warmup=0,interval=1"]


class Recorder(SequencePolicy):
    """Wraps a policy in the engine and records every input it is shown and every answer it gives."""

    def __init__(self, policy):
        self.policy, self.calls = policy, []
        for k in ("name", "needs_draft", "k_min", "needs_costs", "needs_reference", "needs_rank_acceptance"):
            setattr(self, k, getattr(policy, k))

    def reset(self, c):
        self.policy.reset(c)

    def max_draft(self):
        k = self.policy.max_draft()
        self.calls.append(("max_draft", (), k))
        return k

    def after_draft(self, *args):
        v = self.policy.after_draft(*args)
        self.calls.append(("after_draft", args, v))
        return v

    def update(self, o):
        self.calls.append(("update", (o,), None))
        self.policy.update(o)


@pytest.mark.parametrize("spec", [s for s in LIVE if "clock" not in s])
def test_replay_of_a_live_trace_equals_live(spec):
    """Feeding a fresh policy the live run's recorded inputs (what a trace stores) reproduces every decision,
    with the steps' measured times replaced (a replay has the cost model, not the clock)."""
    target = sharpen(llama(vocab=70, seed=5))
    draft = perturbed(target, 0.3, seed=6)
    engine = SpecEngine(target, ModelDrafter(draft), costs=ENGINE_COSTS)
    live = Recorder(build(spec, 4))
    g = engine.generate([4, 9, 2, 7, 7, 1, 30, 12], live, max_new_tokens=60)
    assert len(g.steps) > 5 and any(c[0] == "after_draft" for c in live.calls)
    replay = build(spec, 4)
    replay.reset(GenerationContext(costs=ENGINE_COSTS))
    for kind, args, answer in live.calls:
        if kind == "max_draft":
            assert replay.max_draft() == answer
        elif kind == "after_draft":
            assert replay.after_draft(*args) == answer
        else:
            (o,) = args
            replay.update(Step(k_max=o.k_max, drafted=o.drafted, accepted=o.accepted, emitted=o.emitted,
                               q_tokens=list(o.q_tokens), q_max=list(o.q_max), entropy=list(o.entropy)))


def test_live_entropies_reach_the_policy():
    target = sharpen(llama(vocab=70, seed=5))
    engine = SpecEngine(target, ModelDrafter(perturbed(target, 0.3, seed=6)), costs=ENGINE_COSTS)
    live = Recorder(build("svip", 4))
    engine.generate([3], live, max_new_tokens=20)
    hs = [args[4] for kind, args, _ in live.calls if kind == "after_draft"]
    assert hs and all(0.0 <= h <= math.log(70) + 1e-6 for h in hs) and max(hs) > 0.0
