"""PairActor in-process (no Ray): ar is timed first and last, configs are shuffled with the seed,
and every policy is warmed up before it is timed."""
import pyarrow as pa
import pytest

import actors.pair_actor as pair_actor
from actors.pair_actor import PairActor
from actors.loading.tiny_pair import save_tiny_pair

QUESTION = {"question_id": 9017, "category": "translation", "turns": ["Say hi."]}
CONFIGS = [("fixed", {}, 1), ("fixed", {}, 2), ("fixed", {}, 3), ("gammatune", {}, 2)]


@pytest.fixture(scope="module")
def actor(tmp_path_factory):
    target, draft = save_tiny_pair(tmp_path_factory.mktemp("pair"))
    return PairActor({"target": target, "draft": draft, "name": "tiny"}, "tiny", warmup=1, warmup_question=QUESTION,
                     calibrate={"context": 8, "max_tokens": 2, "repeats": 1, "judge": False}, generation={"max_new_tokens": 4})


def task(key="tiny|q9017|b0", seed=0, repeats=1):
    return {"task_key": key, "question": QUESTION, "configs": CONFIGS, "repeats": repeats, "seed": seed,
            "generation": {"max_new_tokens": 4}}


def order(table: pa.Table) -> list[tuple]:
    d = table.to_pydict()
    return [(p, g, t) for p, g, t in zip(d["policy"], d["gamma"], d["ar_timing"])]


def test_ar_first_and_last_around_shuffled_configs(actor, monkeypatch):
    warmed = []
    real = pair_actor.run_questions
    monkeypatch.setattr(pair_actor, "run_questions", lambda pair, qs, policies, **kw: (
        warmed.append(policies(1)[0].name) if [tuple(q) for q in qs] == [tuple(QUESTION["turns"])]
        and kw.get("seed") is None else None, real(pair, qs, policies, **kw))[1])
    t = actor.run_task(task(repeats=2))["rows"]
    rows = order(t)
    assert all(s == "ok" for s in t.column("status").to_pylist())
    assert set(t.column("template").to_pylist()) == {actor.template} and actor.template   # recorded in every row
    for rep in (rows[:6], rows[6:]):
        assert rep[0] == ("ar", 0, "first") and rep[-1] == ("ar", 0, "last")
        assert sorted((p, g) for p, g, _ in rep[1:-1]) == sorted((n, g) for n, _, g in CONFIGS)
        assert all(tm == "" for _, _, tm in rep[1:-1])
    # the shuffle depends on the seed, the task and the repeat, and is reproducible
    orders = {tuple(order(actor.run_task(task(seed=s))["rows"])[1:5]) for s in range(3)} | {tuple(rows[1:5]), tuple(rows[7:11])}
    assert len(orders) > 1
    assert order(actor.run_task(task(repeats=2))["rows"]) == rows
    # fixed and gammatune were each warmed up once, the first time they were met (ar at start-up)
    assert sorted(warmed) == ["fixed", "gammatune"]



def test_every_row_carries_its_steps_clocks(actor):
    """``draft_times`` / ``verify_times``: one entry per decoding step, summing to the row's ``draft_time`` /
    ``verify_time`` (no claim about how long anything took: timings are the machine's)."""
    d = actor.run_task(task())["rows"].to_pydict()
    for i in range(len(d["policy"])):
        n = d["decoding_steps"][i]
        assert len(d["draft_times"][i]) == len(d["verify_times"][i]) == len(d["accept_lengths"][i]) == n > 0
        assert sum(d["draft_times"][i]) == pytest.approx(d["draft_time"][i], rel=1e-12)
        assert sum(d["verify_times"][i]) == pytest.approx(d["verify_time"][i], rel=1e-12)
        assert all(v > 0 for v in d["verify_times"][i]) and all(t >= 0 for t in d["draft_times"][i])
        assert all(t > 0 for t, k in zip(d["draft_times"][i], d["drafted"][i]) if k)      # a draft forward ran


def test_task_warmup_runs_the_tasks_own_questions_with_ar_before_timing(actor, monkeypatch):
    """``task_warmup`` N: N untimed ``ar`` runs of the task's own questions come before its first timed ``ar``; they
    add no row, and the timed order is unchanged."""
    calls = []
    real = pair_actor.run_questions
    monkeypatch.setattr(pair_actor, "run_questions", lambda pair, qs, policies, **kw: (
        calls.append((policies(1)[0].name, [tuple(q) for q in qs])), real(pair, qs, policies, **kw))[1])
    cold = order(actor.run_task(task())["rows"])
    n_cold = len(calls)
    monkeypatch.setattr(actor, "task_warmup", 2)
    calls.clear()
    warm = order(actor.run_task(task())["rows"])
    assert warm == cold and len(calls) == n_cold + 2
    assert calls[:3] == [("ar", [tuple(QUESTION["turns"])])] * 3       # two untimed, then the timed first ar

def test_report_from_a_logged_task(actor, tmp_path, capsys):
    """Actor tables → Parquet log → ``specsweep report``: intervals and the noise floor are printed."""
    import argparse

    from jobs.store.parquet_log import ParquetLog
    from jobs.report_cli import main

    log = ParquetLog(tmp_path)
    log.prepare("fp", {})
    for qid in (9017, 9021, 9023):
        t = task(key=f"tiny|q{qid}|b0")
        t["question"] = {**QUESTION, "question_id": qid}
        log.write(actor.run_task(t)["rows"])
    assert main(argparse.Namespace(parquet=str(tmp_path), experiment=None, format="md", compare=None)) == 0
    text = capsys.readouterr().out
    assert "## Noise floor" in text and "| tiny" in text and "ar last / ar first" in text
    assert "overall 95% CI" in text and "MAL 95% CI" in text and "average" in text
    df = log.read()
    assert sorted(df[df["policy"] == "ar"]["ar_timing"].unique()) == ["first", "last"]
    assert df["tstamp"].notna().all()


def test_replayed_configs_get_one_row_per_turn_whatever_the_repeats(actor):
    """Repeats measure live timing noise; a replay is deterministic, so it is made once (repeat 0), not copied."""
    t = {**task(key="tiny|q9017|rep", repeats=2), "live": [("fixed", {}, 2)],
         "replay": [("fixed", {}, 1), ("gammatune", {}, 2)]}
    d = actor.run_task(t)["rows"].to_pydict()
    replayed = [(p, g, r) for p, g, r, m in zip(d["policy"], d["gamma"], d["repeat"], d["mode"]) if m == "replay"]
    assert sorted(replayed) == [("fixed", 1, 0), ("gammatune", 2, 0)]
    live = [(p, r) for p, r, m in zip(d["policy"], d["repeat"], d["mode"]) if m == "live" and p == "fixed"]
    assert sorted(live) == [("fixed", 0), ("fixed", 1)]
    assert all(s == "ok" for s in d["status"])
