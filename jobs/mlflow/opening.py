"""Creating or reusing the runs of one sweep: the sweep run, the policy runs, their params, tags and dataset input.

Rules:
- A run the sweep already has (same sweep key, same run key, not superseded) is reused: status RUNNING again, its
  stored points remembered for the once-only rule, its dataset input logged only when it lacks this selection.
- A new policy run gets the tags of ``jobs/mlflow/runs.py``'s ``policy_tags`` plus ``drafter`` (the drafter kind of
  its pair, the ``@B{B}`` batch suffix of the pair label ignored), its params and the dataset input.
"""
from __future__ import annotations

import json
import platform
from pathlib import Path

from jobs.mlflow.artifacts import log_dataset
from jobs.mlflow.runs import ROLE, SWEEP_KEY, base_pair, fit_name, policy_params, policy_tags, run_key, run_name, safe
from jobs.redact import redact


def dataset_label(cfg) -> str:
    """The dataset's source and selection (categories, limits, ids) in one line, credentials masked."""
    ds = cfg.dataset
    parts = [ds.source]
    for k in ("categories", "limit_per_category", "question_ids"):
        v = getattr(ds, k)
        if v:
            parts.append(f"{k}={','.join(map(str, v)) if isinstance(v, (list, tuple)) else v}")
    return redact(" ".join(parts))[:250]


def sweep_params(cfg, output: str) -> dict:
    """Params of the sweep run: environment and the config's main fields."""
    return {"python": platform.python_version(), "platform": platform.platform(), "fingerprint": cfg.fingerprint(),
            "pairs": ",".join(p.label for p in cfg.pairs), "gammas": ",".join(map(str, cfg.gammas)),
            "policies": len(cfg.policies), "repeats": cfg.repeats, "seed": cfg.seed,
            "max_new_tokens": cfg.generation.get("max_new_tokens"),
            "temperature": cfg.generation.get("temperature", 0.0), "output": output,
            "mode": getattr(cfg, "mode", "live")}


def has_dataset(run, dataset) -> bool:
    """Whether ``run`` already has ``dataset`` (same name and digest) as an input."""
    inputs = getattr(run, "inputs", None)
    return any(d.dataset.digest == dataset.digest and d.dataset.name == dataset.name
               for d in (getattr(inputs, "dataset_inputs", None) or []))


def create_sweep_run(tracker) -> str:
    """Create ``tracker``'s sweep run (tags, params); returns its id."""
    from mlflow.entities import Param  # heavy: mlflow

    c, cfg = tracker.client, tracker.cfg
    tags = {**tracker.common, ROLE: "sweep", "specsweep.config": json.dumps(cfg.public_dict(), default=str)[:5000],
            "mlflow.note.content": f"Sweep {cfg.name!r} into {tracker.output}: its policy runs carry the tag "
                                   f"{SWEEP_KEY} = {tracker.key}."}
    run_id = c.create_run(tracker.exp_id, run_name=fit_name(cfg.name, f" · sweep · {Path(tracker.output).name}"),
                          tags=safe(tags)).info.run_id
    c.log_batch(run_id, params=[Param(k, v) for k, v in safe(sweep_params(cfg, tracker.output)).items()])
    return run_id


def open_policy_run(tracker, key: tuple) -> None:
    """Reuse the sweep's existing run for ``key`` = (pair, spec, mode) (status RUNNING) or create it."""
    from mlflow.entities import Param, RunTag  # heavy: mlflow

    c, run, label = tracker.client, tracker.runs[key], dataset_label(tracker.cfg)
    pair, spec, mode = key
    old = tracker.found.get(run_key(pair, spec, mode))
    if old is not None:
        run["id"] = old.info.run_id
        c.update_run(run["id"], status="RUNNING")
        tracker.load_points(old)
        if not has_dataset(old, tracker.dataset):
            log_dataset(c, [run["id"]], tracker.dataset, label)
        return
    tags = policy_tags(tracker.common, tracker.parent, pair, run["policy"], spec, mode)
    drafters = {p.label: p.drafter_kind for p in tracker.cfg.pairs}                   # model | eagle | ngram | none
    tags["drafter"] = drafters.get(base_pair(pair), "")
    run["id"] = c.create_run(tracker.exp_id, run_name=run_name(pair, spec, mode), tags=safe(tags)).info.run_id
    params = policy_params(pair, run["policy"], spec, mode, tracker.cfg.gammas, run["params"])
    c.log_batch(run["id"], params=[Param(k, v) for k, v in params.items()],
                tags=[RunTag("mlflow.source.name", "specsweep")])
    log_dataset(c, [run["id"]], tracker.dataset, label)
