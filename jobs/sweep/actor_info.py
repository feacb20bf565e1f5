"""What a sweep stores about its actors: ``OUTPUT/actors.json`` and, for replay, ``OUTPUT/traces/cost_models.json``.

Rule: both files are written once the actors are up (device, template, measured and fitted cost model per actor),
and again once every task has run, after each actor measured its **batch cost surface** (``CostModel.batch``,
``actors/costs/batch_costs.py``) at every batch size > 1 the sweep ran (and at 1): a live batch sweep measures it only
then, a replay or ``gt-batch`` one measured it mid-sweep, after the first write. The γ-table
(``jobs/report/gamma_table.py``) and ``specsweep replay`` read the stored surface; without it a B-row step would be
priced as one row over B·L tokens. A surface that cannot be measured leaves the first files as they were, with one
line saying so.
"""
from __future__ import annotations

import json
from pathlib import Path

from jobs.config import SweepConfig
from jobs.store.failures import first_line
from jobs.store.output import record_written
from jobs.sweep.signals import say


def write_actor_info(cfg: SweepConfig, infos: dict) -> None:
    """``OUTPUT/actors.json`` (device, template, measured and fitted cost model per actor) and, for replay,
    ``OUTPUT/traces/cost_models.json`` (the cost model each pair's replayed times were predicted with)."""
    out = Path(cfg.output)
    record_written(out / "actors.json", out)
    (out / "actors.json").write_text(json.dumps(infos, indent=1))
    models = {label: [i.get("cost_model") for i in acts] for label, acts in infos.items()
              if any(i.get("cost_model") for i in acts)}
    if models:
        (out / "traces").mkdir(exist_ok=True)
        record_written(out / "traces" / "cost_models.json", out)
        (out / "traces" / "cost_models.json").write_text(json.dumps(models, indent=1))


def store_batch_surface(cfg: SweepConfig, backend) -> None:
    """After the tasks: each actor's batch cost surface at the sweep's batch sizes into the actor files (module
    rule); nothing to do for a batch-1 sweep."""
    sizes = sorted(int(b) for b in cfg.batch_sizes)
    if max(sizes) <= 1:
        return
    try:
        infos = backend.batch_surface(sizes)
    except Exception as e:  # the rows are written: a surface that cannot be measured costs only the γ-table at B > 1
        say(f"specsweep: the batch cost surface could not be measured ({first_line(e)}); actors.json keeps the "
            "cost models without it")
        return
    write_actor_info(cfg, infos)
