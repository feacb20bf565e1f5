"""MLflow: one parent run per sweep, one child run per (pair, policy, initial γ).

Runs are found again by tags (``specsweep.sweep`` = config fingerprint,
``specsweep.config_key``), so a resumed sweep reuses its runs instead of duplicating
them. Metrics go in one ``log_batch`` call per run (one call per metric
costs ≈ 14 ms on sqlite).
"""
from __future__ import annotations

import json
import math
import time

import pandas as pd

from policies.errors import SpecsweepError

SWEEP_TAG, KEY_TAG = "specsweep.sweep", "specsweep.config_key"


def client_for(uri: str):
    """An MlflowClient on ``uri``, checked reachable before any model loads."""
    import logging
    import os

    logging.getLogger("mlflow").setLevel(logging.ERROR)
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")   # an unreachable server fails in seconds
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    import mlflow
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(uri)
    client = MlflowClient(tracking_uri=uri)
    try:
        client.search_experiments(max_results=1)
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise SpecsweepError(f"cannot reach the MLflow tracking URI {uri!r} ({first}); default is sqlite:///mlflow.db") from None
    return client


def _experiment(client, name: str) -> str:
    exp = client.get_experiment_by_name(name)
    return exp.experiment_id if exp else client.create_experiment(name)


def _find_run(client, exp_id: str, filt: str):
    runs = client.search_runs([exp_id], filter_string=filt, max_results=1)
    return runs[0] if runs else None


def parent_run(client, experiment: str, fingerprint: str, name: str) -> str:
    exp_id = _experiment(client, experiment)
    run = _find_run(client, exp_id, f"tags.`{SWEEP_TAG}` = '{fingerprint}' and tags.`specsweep.role` = 'parent'")
    if run:
        return run.info.run_id
    run = client.create_run(exp_id, run_name=name, tags={SWEEP_TAG: fingerprint, "specsweep.role": "parent"})
    return run.info.run_id


def _metric_batch(values: dict, step: int = 0):
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    return [Metric(k, float(v), now, step) for k, v in values.items()
            if v is not None and not (isinstance(v, float) and math.isnan(v))]


def log_sweep(client, experiment: str, fingerprint: str, cfg_dict: dict, summary: pd.DataFrame,
              speedups: pd.DataFrame, env: dict, artifacts: list = (), failed: int = 0, tables: dict | None = None) -> str:
    """Create or reuse the parent and child runs and log params, metrics and artifacts; returns the parent id."""
    from mlflow.entities import Param, RunTag

    exp_id = _experiment(client, experiment)
    parent = parent_run(client, experiment, fingerprint, cfg_dict.get("name", "sweep"))
    existing = {r.data.tags.get(KEY_TAG): r.info.run_id for r in client.search_runs(
        [exp_id], filter_string=f"tags.`{SWEEP_TAG}` = '{fingerprint}' and tags.`specsweep.role` = 'child'",
        max_results=10000)}
    sp = speedups.set_index(["pair", "policy_spec", "gamma"]) if len(speedups) else None
    for _, r in summary.iterrows():
        key = f"{r['pair']}|{r['policy_spec']}|{int(r['gamma'])}"
        run_id = existing.get(key)
        if run_id is None:
            run_id = client.create_run(exp_id, run_name=f"{r['policy']} γ={int(r['gamma'])} {r['pair']}", tags={
                SWEEP_TAG: fingerprint, "specsweep.role": "child", KEY_TAG: key, "mlflow.parentRunId": parent}).info.run_id
            params = [Param("pair", str(r["pair"])), Param("policy", str(r["policy"])),
                      Param("policy_spec", str(r["policy_spec"])[:500]), Param("initial_gamma", str(int(r["gamma"])))]
            client.log_batch(run_id, params=params)
        metrics = {"throughput": r["throughput"], "mean_accepted_length": r["mean_accepted_length"],
                   "acceptance_rate": r["acceptance_rate"], "questions": r["questions"], "new_tokens": r["new_tokens"]}
        # 95 % paired-bootstrap intervals and the pair's ar/ar noise floor (jobs/metrics.py)
        metrics.update({k: r[k] for k in ("throughput_lo", "throughput_hi", "mal_lo", "mal_hi", "speedup", "speedup_lo",
                                          "speedup_hi", "noise_floor") if k in r.index})
        if sp is not None and (r["pair"], r["policy_spec"], r["gamma"]) in sp.index:
            row = sp.loc[(r["pair"], r["policy_spec"], r["gamma"])]
            metrics.update({f"speedup_{g}": row[g] for g in row.index if g != "policy"})   # with <group>_lo / _hi
        client.log_batch(run_id, metrics=_metric_batch(metrics))
        client.set_terminated(run_id)
    tags = [RunTag("specsweep.config", json.dumps(cfg_dict, default=str)[:5000])]
    if not existing:
        params = [Param(k, str(v)[:500]) for k, v in env.items()]
        client.log_batch(parent, params=params, tags=tags)
    client.log_batch(parent, metrics=_metric_batch({"configs": len(summary), "failed_rows": failed}))
    for path in artifacts:
        client.log_artifact(parent, str(path))
    for name, table in (tables or {}).items():     # MLflow tables, viewable in the UI's artifact pane
        if table is not None and len(table):
            client.log_table(parent, data=table.reset_index(), artifact_file=f"tables/{name}.json")
    client.set_terminated(parent)
    return parent
