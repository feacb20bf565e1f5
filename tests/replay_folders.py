"""Scripted sweep output folders for ``specsweep replay`` and ``tune`` tests (no model, no sweep run): traces of a
tiny reference turn per pair, each actor's cost model, a policies file, and a replayed log for ``tune``."""
import json
from pathlib import Path

import pandas as pd

from actors.rollouts import Rollout, Trace, write_traces
from policies.costs import CostModel

REFERENCE = [0, 1, 2, 3, 0, 1, 2, 3]
COUNTS = {"a": {"target": 1000, "draft": 100}, "b": {"target": 1000, "draft": 200}}
# a tiny Llama's config.json: all a roofline reads of a model folder
CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32, "intermediate_size": 64,
          "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "head_dim": 8,
          "vocab_size": 64, "max_position_embeddings": 1024, "tie_word_embeddings": False}


def cli(*argv) -> int:
    from jobs.cli import main

    return main([str(a) for a in argv])


def cost_dict(params: dict | None, t_verify: float = 0.05) -> dict:
    """A trusted cost model in ``specsweep calibrate --out`` form that measured models of ``params`` counts."""
    m = CostModel.measured(0.01, {1: t_verify, 2: t_verify * 1.1, 4: t_verify * 1.3, 8: t_verify * 1.6})
    m.trust = {"reliable": True, "reasons": []}
    m.params = dict(params or {})
    return m.to_dict()


def scripted_trace(root: Path, pair: str, qid: int, max_draft: int = 4) -> Trace:
    """A turn of 8 tokens whose draft matches the reference for a few proposals at each position."""
    rollouts = []
    for j, n in enumerate([3, 0, 2, 1, 3, 0, 1, 0]):
        toks = [REFERENCE[min(j + i, 7)] if i < n else (REFERENCE[min(j + i, 7)] + 1) % 4 for i in range(max_draft)]
        rollouts.append(Rollout(toks, [0.6] * max_draft, [0.7] * max_draft, [1.0] * max_draft))
    return Trace(prompt_ids=[1, 2, 3], reference=list(REFERENCE), finished_by_eos=False, max_new_tokens=8,
                 max_draft=max_draft, eos_ids=[9], rollouts=rollouts, pair=pair, target=str(root / "models" / "target"),
                 draft=str(root / "models" / f"draft-{pair}"), prefill_time=0.02, ar_step_times=[0.05] * 8,
                 ar_wall_time=0.42, key=f"{pair}|q{qid}|t0", meta={"question_id": qid, "turn": 0, "category": "qa"})


def scripted_sweep(root: Path, pairs=("a", "b"), max_draft: int = 4) -> Path:
    """A sweep output folder as ``mode: replay`` leaves it: traces of 2 questions per pair, and ``actors.json`` with
    each actor's cost model recording the parameter counts of its pair's models (``COUNTS``)."""
    out = root / "out"
    for name in ("target", *(f"draft-{p}" for p in pairs)):
        (root / "models" / name).mkdir(parents=True, exist_ok=True)
        (root / "models" / name / "config.json").write_text(json.dumps(CONFIG))
    for p in pairs:
        write_traces(out / "traces" / f"{p}.parquet", [scripted_trace(root, p, q, max_draft) for q in (1, 2)])
    infos = {p: [{"costs": cost_dict(COUNTS[p]), "cost_model": cost_dict(COUNTS[p])}] for p in pairs}
    (out / "actors.json").write_text(json.dumps(infos))
    return out


def policies_file(root: Path, text: str = "policies: [fixed]\ngammas: [2]\n", name: str = "f") -> Path:
    path = root / f"{name}.yaml"
    path.write_text(text)
    return path


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specsweep: error: "), err
    assert "Traceback" not in err[0] and len(err[0]) < 600
    return err[0]


def tune_rows(fixed_1_missing_on=None):
    """Six questions: ar 10 s, the bound 4 s, threshold γ 2 6 s, fixed γ 1 9 s (NaN on one question), fixed γ 4 5 s."""
    rows = []
    for q in range(1, 7):
        for policy, spec, g, t in (("ar", "ar", 0, 10.0), ("oracle-bound", "oracle (bound)", 0, 4.0),
                                   ("threshold", "threshold", 2, 6.0), ("fixed", "fixed", 4, 5.0),
                                   ("fixed", "fixed", 1, float("nan") if q == fixed_1_missing_on else 9.0)):
            rows.append({"pair": "p", "policy": policy, "policy_spec": spec, "gamma": g, "repeat": 0, "question_id": q,
                         "category": "qa", "turn": 0, "new_tokens": 100, "wall_time": t, "accept_lengths": [1],
                         "status": "ok", "ar_timing": "", "mode": "replay"})
    return pd.DataFrame(rows)
