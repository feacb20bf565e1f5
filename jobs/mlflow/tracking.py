"""MLflow as the comparison surface of a sweep: runs stream in while it runs, γ curves per policy.

Layout (the "MLflow" section of docs/sweeps.md says why); opening the store is
``jobs/mlflow/client.py``, run identity and tags ``jobs/mlflow/runs.py``, running sums and the
sender thread ``jobs/mlflow/stream.py``, creating or reusing the runs ``opening.py``, the summary into the
runs ``summary.py`` and ``points.py``, the end of a sweep (tables, statuses) ``ending.py``, the γ-curve figure
and dataset input ``artifacts.py``, reading back ``read.py``.

- The experiment (the sweep's ``experiment`` or ``name``) carries the tag
  ``mlflow.experimentKind = custom_model_development``, the value with which MLflow 3's UI
  opens an experiment on its runs table instead of the GenAI overview.
- One **sweep run** per (config fingerprint, output folder): tags ``specsweep.sweep_key``,
  ``output``, ``dataset``, ``mode`` (the sweep's: live, replay or both), the redacted config;
  params = environment and the config's main fields; progress metrics; figures and tables as
  artifacts; the questions as its dataset input.
- One **policy run** per (pair, policy spec, mode), ``ar`` included (always live), top-level
  (not nested: the UI collapses nested runs and leaves them out of its charts) and linked to its
  sweep run by the tag ``specsweep.parent_run``. Tags ``pair``, ``policy``, ``policy_spec``,
  ``mode`` (live or replay), ``dataset``, ``output``; params = the policy's resolved parameters;
  the questions as its dataset input; ``gamma_curve.png`` as its artifact.
- Every metric of a policy run uses ``step = initial γ`` (across-γ ones step 0), one key per
  quantity, so the chart view opens on the policies' curves over γ (about ten charts; see
  ``jobs/mlflow/summary.py`` for what is charted and what goes into ``gamma_points.json``).
  ``throughput``, ``mean_accepted_length`` and ``acceptance_rate`` are logged the moment the
  last task of that (pair, policy, γ, mode) finishes; ``speedup`` (vs ``ar``, overall) when the
  sweep is summarised (it needs every ``ar`` row). The ``ar`` run and the oracle bound's (no γ)
  repeat their one measurement at each γ of the sweep so they draw as flat lines.
- A summary row goes to the run of its ``mode`` column; without that column (one mode per
  config, as the sweep's figures use) to the run of the sweep's preferred mode (``live`` for
  ``mode: both``, else ``replay``) when that config has rows in it, else to its other mode.
- The across-γ summary (``across_gamma/table2_speedup_mean``, ``best_gamma``, ``fraction_of_oracle``;
  the rest in ``gamma_points.json``) is logged at step 0, only to a run that holds every γ of
  its (pair, policy) in that summary (never a mix of modes).
- ``live/<LIVE_KEYS>`` stream after each task that added questions to a speculative config: its
  running estimate at ``step`` = γ (a step's latest point is current); the sweep run: ``progress/*``.

Rules:
- A (metric, step) point is written once: a value equal (relative 1e-9) to the latest point at
  that step is never written again, so a resumed or repeated sweep adds no history points; a
  different value (a retried task changed it) is appended and, being latest, wins. A NaN value is
  appended only over a finite latest point (a time no longer trusted), other non-finite values never.
- A re-run (``start(rows)``) queues the completion points of every complete config, so what only
  streaming writes (the other mode's runs) and an earlier session missed is logged; a NaN latest point
  stays. ``fresh=True`` (``--fresh``) supersedes the sweep key's old runs (``runs.py``) and starts new ones.
- Streaming never waits on MLflow (``jobs/mlflow/stream.py``). If MLflow fails mid-sweep or at its end, the
  sweep goes on (the Parquet log is the record; its report is written) and one line says so.
- Statuses: RUNNING from ``start`` (also on resume); FINISHED when the sweep finished with every
  row ok; FAILED when rows or tasks failed or an error stopped it (policy runs whose configs all
  finished are FINISHED); KILLED on Ctrl-C / SIGTERM.
- A replayed config whose rows say their predicted times are not trusted (``time_reliable``
  false, ``actors/costs/calibrate.py``) gets the tag ``times = unreliable`` and no time metrics
  (throughput, speedup); its token and step metrics stay. Pairs whose replayed times validation rejects
  (``mark_untrusted``) get the tag on their replay runs and NaN over their streamed time points.
- No credentials reach MLflow or the console (``redact``), and MLflow's own "View run
  at" lines are switched off (specsweep prints a masked one).
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import pandas as pd

from actors.loading.schema import batch_label
from jobs.mlflow.artifacts import dataset_entity, log_dataset
from jobs.redact import redact
from jobs.mlflow.ending import log_end, set_statuses
from jobs.mlflow.opening import create_sweep_run, dataset_label, has_dataset, open_policy_run
from jobs.mlflow.runs import (LIVE, LIVE_KEYS, PROGRESS, ROLE, SUPERSEDED, SWEEP, SWEEP_KEY, experiment_id,
                              find_policy_runs, finite, first_line, planned_modes, row_mode, run_url, supersede,
                              sweep_key)
from jobs.mlflow.stream import Config, Sender, contribution, measure, records
from jobs.mlflow.summary import AT_COMPLETION
from jobs.report.derived import time_untrusted
from policies.oracle import BOUND_LABEL, BOUND_NAME

TIMES_TAG, UNTRUSTED = "times", "unreliable"
TIME_KEYS = ("throughput", "speedup", LIVE + "speedup")      # what an untrusted predicted time leaves undefined


class SweepTracker:
    """Streams one sweep into MLflow; see the module docstring for the layout and rules.

    Use: ``start(rows_already_in_the_log)`` before the first task, ``task_done(table)`` after
    each task is written to the log, then ``finish(...)`` (summarised) or ``close(status)``
    (interrupted / failed). ``timings`` holds the driver-thread seconds spent here and the
    sender's seconds inside MLflow calls.
    """

    def __init__(self, client, cfg, tasks: list[dict], uri: str | None = None, fresh: bool = False):
        from actors.pair_actor import policy_spec  # heavy: torch

        self.client, self.cfg, self.uri, self.tasks = client, cfg, uri or cfg.tracking_uri, tasks
        self.fresh = fresh                           # supersede the runs of this sweep key instead of reusing them
        self.output = str(Path(cfg.output).resolve())
        self.key = sweep_key(cfg.fingerprint(), cfg.output)
        self.runs: dict[tuple, dict] = {}            # (pair, spec, mode) → {"id", "policy", "params"}
        self.configs: dict[tuple, Config] = {}       # (pair, spec, γ, mode) → Config
        self.task_sets: dict[tuple, set] = {}        # (pair, spec, γ) → tasks that run it, in any mode
        self.params_of = {policy_spec(n, p): p for n, p in cfg.policies}
        for t, pair in ((t, batch_label(t["pair"], int(t.get("batch_size", 1)))) for t in tasks):   # rows' pair
            for name, params, g in [("ar", {}, 0)] + [tuple(c) for c in t["configs"]]:
                spec = policy_spec(name, params) if name != "ar" else "ar"
                self.task_sets.setdefault((pair, spec, int(g)), set()).add(t["task_key"])
                for mode in ["live"] if name == "ar" else planned_modes(t, (name, params, g)):
                    self._config((pair, spec, int(g), mode), name).planned.add(t["task_key"])
            if t.get("replay") and pair == t["pair"]:   # the actor adds the oracle bound to every replayed B = 1 task
                self._config((t["pair"], BOUND_LABEL, 0, "replay"), BOUND_NAME).planned.add(t["task_key"])
        self.total_tasks = len(tasks)
        self.ok_tasks: set[str] = set()
        self.seen_tasks: set[str] = set()
        self.progress_step = 0                       # the sweep run's progress/* step (tasks logged so far)
        self.points: dict[tuple, float] = {}         # (run_id, key, step) → latest value
        self.stamps: dict[tuple, int] = {}           # (run_id, key, step) → its timestamp (ms; live/ keys too)
        self.parent = self.exp_id = self.dataset = None
        self.found: dict = {}                        # run key → existing run of this sweep (on resume)
        self.sender: Sender | None = None
        self.timings = {"driver_s": 0.0, "start_s": 0.0, "finish_s": 0.0, "sender_s": 0.0, "tasks": 0}
        self.untrusted: set[tuple] = set()           # configs with a row whose predicted time is not trusted
        self.tagged_untrusted: set[str] = set()

    def _config(self, key: tuple, policy: str) -> Config:
        """The config ``key`` = (pair, spec, γ, mode), registered with its run on first use."""
        pair, spec, g, mode = key
        self.runs.setdefault((pair, spec, mode), {"id": None, "policy": policy, "params": self.params_of.get(spec, {})})
        if key not in self.configs:
            self.configs[key] = Config((pair, spec, mode), g, self.task_sets.get((pair, spec, g), ()))
        return self.configs[key]

    # ------------------------------------------------------------------ start
    def dataset_label(self) -> str:
        return dataset_label(self.cfg)

    def start(self, rows=None) -> str:
        """Create or reuse the sweep run and every policy run (status RUNNING); seed running sums from
        ``rows`` (the log of a resumed sweep) and queue only the completion points the store lacks. Returns the sweep
        run id."""
        t0 = time.perf_counter()
        c, cfg = self.client, self.cfg
        self.exp_id = experiment_id(c, cfg.experiment_name, self.uri)
        found = c.search_runs([self.exp_id], filter_string=f"tags.`{SWEEP_KEY}` = '{self.key}'", max_results=10000)
        if self.fresh:                               # --fresh: the old runs' values never show through
            supersede(c, found)
            found = []
        sweep = [r for r in found if r.data.tags.get(ROLE) == "sweep" and SUPERSEDED not in r.data.tags]
        self.dataset = dataset_entity(cfg.dataset.source, self.tasks)
        self.common = {SWEEP: cfg.fingerprint(), SWEEP_KEY: self.key, "output": self.output,
                       "dataset": self.dataset_label(), "mode": getattr(cfg, "mode", "live")}
        if sweep:
            self.parent = sweep[0].info.run_id
            c.update_run(self.parent, status="RUNNING")
            self.load_points(sweep[0])
        else:
            self.parent = create_sweep_run(self)
        if not (sweep and has_dataset(sweep[0], self.dataset)):
            log_dataset(c, [self.parent], self.dataset, self.dataset_label())
        self.found = find_policy_runs(found)
        for key in list(self.runs):
            open_policy_run(self, key)
        if rows is not None:
            self._ingest(records(rows))
            self._open_missing()
            for conf in self.configs.values():
                conf.live_step = measure(conf.parts)["questions"]
        self.sender = Sender(c)
        self.sender.start()
        if rows is not None:
            self._queue_settled()
        url = run_url(self.uri, self.exp_id, self.parent)
        print(f"MLflow: experiment {cfg.experiment_name!r}, sweep run {self.parent} in {redact(self.uri)}"
              + (f"; view it at {url}" if url else f"; open with: mlflow ui --backend-store-uri "
                                                     f"{redact(self.uri)} --workers 1"), file=sys.stderr)
        self.timings["start_s"] = time.perf_counter() - t0
        return self.parent

    def _open_missing(self) -> None:
        """Open the runs of modes the plan did not announce but rows carry (created on first sight)."""
        if self.parent is None:
            return
        for key, run in self.runs.items():
            if run["id"] is None:
                open_policy_run(self, key)

    def load_points(self, run) -> None:
        """Remember the existing (key, step) points of a reused run so they are not written again (of the running
        estimates only ``live/speedup``, which an untrusted time sets to NaN)."""
        for key in run.data.metrics:
            if key.startswith(LIVE) and key not in TIME_KEYS:     # running estimates: not once-only
                continue
            for m in sorted(self.client.get_metric_history(run.info.run_id, key), key=lambda m: m.timestamp):
                self.points[(run.info.run_id, key, m.step)] = m.value
                self.stamps[(run.info.run_id, key, m.step)] = m.timestamp
        if run.data.tags.get(ROLE) == "sweep":
            self.progress_step = max([s for (rid, k, s) in self.points
                                      if rid == run.info.run_id and k == PROGRESS + "tasks_done"], default=0)

    # ------------------------------------------------------------------ per task
    def _ingest(self, rows: list[dict]) -> set:
        """Replace each task's contribution with its rows; returns the configs touched."""
        touched, by_task = set(), {}
        for r in rows:
            by_task.setdefault(r["task_key"], []).append(r)
        for tk, task_rows in by_task.items():
            self.seen_tasks.add(tk)
            if all(r["status"] == "ok" for r in task_rows):
                self.ok_tasks.add(tk)
            else:
                self.ok_tasks.discard(tk)
            parts: dict = {}
            for r in task_rows:
                if r["status"] != "ok" or (r.get("ar_timing") or "") == "last":
                    continue
                ar = r["policy"] == "ar"
                k = (r["pair"], "ar" if ar else r["policy_spec"], int(r["gamma"]),
                     "live" if ar else row_mode(r.get("mode")))
                self._config(k, r["policy"]).planned.add(tk)
                parts.setdefault(k, []).append(contribution(r))
                if time_untrusted(r.get("time_reliable")):
                    self.untrusted.add(k)
            for k, conf in self.configs.items():
                if tk in conf.planned and (k in parts or tk in conf.parts):
                    conf.parts[tk] = parts.get(k, [])
                    touched.add(k)
        return touched

    def complete(self, conf: Config) -> bool:
        return conf.planned <= self.ok_tasks

    def task_done(self, table) -> None:
        """Update the running sums with one finished task's rows and queue the affected runs' metrics."""
        from mlflow.entities import Metric  # heavy: mlflow

        t0 = time.perf_counter()
        touched = self._ingest(records(table))
        try:                   # MLflow gone (now or before): streaming stops, the sweep goes on as the sender does
            if self.sender is not None and self.sender.error is None:
                self._open_missing()
        except Exception as e:
            self.sender.error = first_line(e)
        if self.sender is None or self.sender.error is not None:
            return
        now = int(time.time() * 1000)
        batches: dict = {}
        for k in touched:
            conf, (_, spec, g, _) = self.configs[k], k
            m = self._measure(k)
            run_id = self.runs[conf.run]["id"]
            out = batches.setdefault(run_id, [])
            if m["questions"] > conf.live_step and spec not in ("ar", BOUND_LABEL):   # running estimate, step = γ
                conf.live_step = m["questions"]
                for n in (n for n in LIVE_KEYS if finite(m[n])):
                    self.points[(run_id, LIVE + n, g)] = float(m[n])
                    out.append(Metric(LIVE + n, float(m[n]), self._stamp((run_id, LIVE + n, g), now), g))
            out.extend(self._settled(k, m, now))
        self.progress_step += 1
        batches.setdefault(self.parent, []).extend([
            Metric(PROGRESS + "tasks_done", float(len(self.seen_tasks)), now, self.progress_step),
            Metric(PROGRESS + "failed_tasks", float(len(self.seen_tasks - self.ok_tasks)), now, self.progress_step)])
        for run_id, metrics in batches.items():
            self.sender.put(run_id, metrics)
        self.timings["tasks"] += 1
        self.timings["driver_s"] += time.perf_counter() - t0

    def _measure(self, k: tuple) -> dict:
        pair, spec = k[0], k[1]
        ar = self.configs.get((pair, "ar", 0, "live"))
        return measure(self.configs[k].parts, ar.parts if ar is not None and spec != "ar" else None)

    def _settled(self, k: tuple, m: dict, now: int, resumed: bool = False) -> list:
        """Config ``k``'s untrusted tag (once per run) and, once it is complete, its completion points; ``resumed``:
        a point a judged-untrusted time set to NaN is not overwritten."""
        from mlflow.entities import RunTag  # heavy: mlflow

        conf, (_, spec, g, _) = self.configs[k], k
        run_id, out = self.runs[conf.run]["id"], []
        if k in self.untrusted and run_id not in self.tagged_untrusted:     # its time metrics are not logged
            out.append(RunTag(TIMES_TAG, UNTRUSTED))
            self.tagged_untrusted.add(run_id)
        if spec != "ar" and self.complete(conf):       # the γ-free bound: a flat line, one point at each γ
            for step in (self.cfg.gammas if spec == BOUND_LABEL else [g]):
                vals = {n: m[n] for n in AT_COMPLETION
                        if not (resumed and _nan(self.points.get((run_id, n, step))))}
                out.extend(self.new_points(run_id, vals, step, now))
        return out

    def _queue_settled(self) -> None:
        """On a re-run: queue every complete config's completion points (the once-only rule skips the stored ones), so
        what only streaming writes and a failed session missed gets logged."""
        now = int(time.time() * 1000)
        for k, conf in self.configs.items():
            if k in self.untrusted or (k[1] != "ar" and self.complete(conf)):
                self.sender.put(self.runs[conf.run]["id"], self._settled(k, self._measure(k), now, resumed=True))

    def mark_untrusted(self, reasons: dict) -> None:
        """Tag the replayed runs of these pairs ``times = unreliable`` (validation found their times off) and log NaN
        over their streamed time points (``TIME_KEYS``), so no time stays their latest point."""
        from mlflow.entities import RunTag  # heavy: mlflow

        now = int(time.time() * 1000)
        for (pair, _spec, mode), run in self.runs.items():
            if pair not in reasons or mode != "replay" or run["id"] is None or not self.sender:
                continue
            out = [] if run["id"] in self.tagged_untrusted else [RunTag(TIMES_TAG, UNTRUSTED)]
            self.tagged_untrusted.add(run["id"])
            for rid, key, step in [p for p in self.points if p[0] == run["id"] and p[1] in TIME_KEYS]:
                out += self.new_points(rid, {key: math.nan}, step, now)
            self.sender.put(run["id"], out)

    def new_points(self, run_id: str, values: dict, step: int, now: int) -> list:
        """Metrics for the (key, step) points whose value is new or changed (the once-only rule); a NaN value is
        logged only over a finite latest point (a value no longer trusted), other non-finite values never."""
        from mlflow.entities import Metric  # heavy: mlflow

        out = []
        for key, v in values.items():
            old = self.points.get((run_id, key, step))
            if not finite(v):
                if _nan(v) and finite(old):
                    self.points[(run_id, key, step)] = math.nan
                    out.append(Metric(key, math.nan, self._stamp((run_id, key, step), now), int(step)))
                continue
            v = float(v)
            if old is not None and math.isclose(old, v, rel_tol=1e-9, abs_tol=1e-12):
                continue
            self.points[(run_id, key, step)] = v
            out.append(Metric(key, v, self._stamp((run_id, key, step), now), int(step)))
        return out

    def _stamp(self, point: tuple, now: int) -> int:
        """The timestamp of a new point at ``point`` = (run_id, key, step): ``now``, or 1 ms after the point it
        follows, so the newest is always the latest of its step."""
        self.stamps[point] = max(now, self.stamps.get(point, -1) + 1)
        return self.stamps[point]

    # ------------------------------------------------------------------ end
    def flush(self) -> None:
        """Wait until the metrics queued so far are in the tracking store (tests, progress checks)."""
        if self.sender is not None:
            self.sender.flush()

    def _stop_sender(self) -> bool:
        """Flush and stop the background sender; False (and one line) when it failed or did not finish."""
        if self.sender is None:
            return True
        ok = False
        if not self.sender.close():
            print("MLflow: logging did not finish within 60 s; the Parquet log is complete: run the sweep again to "
                  "log what is missing", file=sys.stderr)
        elif self.sender.error:
            print(f"MLflow: logging stopped mid-sweep ({self.sender.error}); the Parquet log is complete: run the "
                  "sweep again to log what is missing", file=sys.stderr)
        else:
            ok = True
        self.timings["sender_s"] = self.sender.busy_s
        self.sender = None
        return ok

    def finish(self, status: str, summary: pd.DataFrame | None, speed: pd.DataFrame | None, failed_rows: int = 0,
               artifacts=(), tables: dict | None = None, table2: pd.DataFrame | None = None) -> str:
        """Log the summary (per-γ points, across-γ metrics, γ curves, artifacts) and set every run's status;
        ``table2``: the report's ``metrics.table2`` (paired on questions), the runs' Table 2 figures.

        Never raises (the sweep's own outcome and report come first): when streaming already failed, the summary is
        not attempted (the server is gone; each call would retry); each part of the end is attempted on its own
        (``jobs/mlflow/ending.py``), the statuses always; a failure here is one line on stderr."""
        t0 = time.perf_counter()
        streamed = self._stop_sender()
        errors = []
        if streamed:
            try:
                errors = log_end(self, summary, speed, failed_rows, artifacts, tables, table2)
            except Exception as e:
                errors = [e]
        if errors:                                         # else the sender's line (if any) has said it
            print(f"MLflow: the sweep's summary could not be logged ({first_line(errors[0])}); the Parquet log and "
                  "report are complete: run the sweep again to log what is missing", file=sys.stderr)
        try:
            set_statuses(self, status if (streamed and not errors) or status != "FINISHED" else "FAILED")
        except Exception as e:
            if streamed and not errors:
                print(f"MLflow: could not mark the runs {status} ({first_line(e)})", file=sys.stderr)
        self.timings["finish_s"] = time.perf_counter() - t0
        return self.parent

    def close(self, status: str) -> None:
        """End an interrupted (KILLED) or failed (FAILED) sweep: flush what was queued, set statuses.

        Never raises: the sweep's own outcome is what the user must see."""
        try:
            self._stop_sender()
            if self.parent is not None:
                set_statuses(self, status)
        except Exception as e:
            print(f"MLflow: could not mark the runs {status} ({first_line(e)})", file=sys.stderr)


def _nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)
