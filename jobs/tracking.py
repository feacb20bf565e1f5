"""MLflow as the comparison surface of a sweep: runs stream in while it runs, γ curves per policy.

Layout (the "MLflow" section of docs/sweeps.md says why):
- The experiment (the sweep's ``experiment`` or ``name``) carries the tag
  ``mlflow.experimentKind = custom_model_development``, the value with which MLflow 3's UI
  opens an experiment on its runs table instead of the GenAI overview.
- One **sweep run** per (config fingerprint, output folder): tags ``specsweep.sweep_key``
  (hash of both), ``output``, ``dataset``, ``mode``, the redacted config; params = environment
  and the config's main fields; progress metrics; figures and tables as artifacts.
- One **policy run** per (pair, policy spec) of that sweep, ``ar`` included, top-level (not
  nested: the UI collapses nested runs and leaves them out of its charts) and linked to its
  sweep run by the tag ``specsweep.parent_run``. Tags ``pair``, ``policy``, ``policy_spec``,
  ``mode`` (live), ``dataset``, ``output``; params = the policy's resolved parameters.
- Per-config metrics use ``step = initial γ``, so the chart of ``throughput`` is the policy's
  curve over γ. ``throughput``, ``mean_accepted_length``, ``acceptance_rate`` and
  ``questions`` are logged the moment the last task of that (pair, policy, γ) finishes;
  ``speedup`` (vs ``ar``, overall), ``speedup_<group>`` and every interval bound present in
  the summary are logged when the sweep is summarised (they need every ``ar`` row). The
  ``ar`` run repeats its one measurement at each γ of the sweep so it draws as a flat baseline.
- The across-γ summary (``across_gamma/table2_speedup_mean`` and ``_std``,
  ``across_gamma/fraction_of_oracle``, ``best_gamma``, ...) is logged at step 0.
- ``live/<metric>_g<γ>`` streams after every task: the running estimate of that config, with
  ``step`` = questions measured so far; the sweep run gets ``progress/tasks_done``.

Rules:
- A (metric, step) point is written once: a value equal (relative 1e-9) to the latest point at
  that step is never written again, so a resumed or repeated sweep adds no history points; a
  different value (a retried task changed it) is appended and, being latest, wins.
- Streaming never waits on MLflow: the driver thread only updates running sums and queues
  ``log_batch`` payloads; one background thread sends them, coalesced per run. If MLflow fails
  mid-sweep the sweep goes on (the Parquet log is the record) and one line says so at the end.
- Statuses: RUNNING from ``start`` (also on resume); FINISHED when the sweep finished with every
  row ok; FAILED when rows or tasks failed or an error stopped it (policy runs whose configs all
  finished are FINISHED); KILLED on Ctrl-C / SIGTERM.
- No credentials reach MLflow or the console: every tag and param value and every message passes
  :func:`mask_credentials` (``scheme://user:token@host`` → ``scheme://***@host``), and MLflow's own
  "View run at" lines are switched off (specsweep prints a masked one).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import re
import sys
import threading
import time
from pathlib import Path

import pandas as pd

from policies.errors import SpecsweepError

ROLE, SWEEP, SWEEP_KEY, RUN_KEY, PARENT = ("specsweep.role", "specsweep.sweep", "specsweep.sweep_key",
                                           "specsweep.run_key", "specsweep.parent_run")
KIND_TAG, KIND = "mlflow.experimentKind", "custom_model_development"
AT_COMPLETION = ("throughput", "mean_accepted_length", "acceptance_rate", "questions")
FROM_SUMMARY = ("throughput_lo", "throughput_hi", "mal_lo", "mal_hi", "speedup", "speedup_lo", "speedup_hi",
                "noise_floor")
LIVE, ACROSS, PROGRESS = "live/", "across_gamma/", "progress/"
MAX_BATCH = 1000                    # MLflow's limit of metrics per log_batch call
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/@]+@")


def mask_credentials(text) -> str:
    """``text`` with the user-info of every URL in it masked (``http://u:t@h`` → ``http://***@h``)."""
    return _USERINFO.sub(r"\1***@", str(text))


def _first_line(e: BaseException) -> str:
    return mask_credentials((str(e).strip().splitlines() or [type(e).__name__])[0][:200])


def client_for(uri: str):
    """An MlflowClient on ``uri``, checked reachable before any model loads; messages never show credentials."""
    import logging

    logging.getLogger("mlflow").setLevel(logging.ERROR)
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")   # an unreachable server fails in seconds
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"   # its "View run at" line shows user:token@
    import mlflow
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(uri)
    client = MlflowClient(tracking_uri=uri)
    try:
        client.search_experiments(max_results=1)
    except Exception as e:
        raise SpecsweepError(f"cannot reach the MLflow tracking URI {mask_credentials(uri)!r} ({_first_line(e)}); "
                             "default is sqlite:///mlflow.db") from None
    return client


def run_url(uri: str, experiment_id: str, run_id: str) -> str | None:
    """The UI address of a run on an http(s) tracking server, credentials masked; None for a local store."""
    if not uri.startswith(("http://", "https://")):
        return None
    return f"{mask_credentials(uri).rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}"


def sweep_key(fingerprint: str, output: str) -> str:
    """Identity of one sweep's runs: the config fingerprint and the resolved output folder."""
    return hashlib.sha256(f"{fingerprint}\0{Path(output).resolve()}".encode()).hexdigest()[:16]


def experiment_id(client, name: str) -> str:
    """Get or create the experiment and make the UI open it on its runs (``mlflow.experimentKind``).

    An explicit kind someone set is kept; a missing or inferred one is replaced."""
    exp = client.get_experiment_by_name(name)
    if exp is None:
        return client.create_experiment(name, tags={KIND_TAG: KIND})
    if exp.lifecycle_stage == "deleted":
        raise SpecsweepError(f"MLflow experiment {name!r} is deleted; restore it or set `experiment:` to another name")
    kind = exp.tags.get(KIND_TAG, "")
    if kind in ("", "no_inferred_type") or kind.endswith("_inferred"):
        client.set_experiment_tag(exp.experiment_id, KIND_TAG, KIND)
    return exp.experiment_id


def _finite(v) -> bool:
    try:
        return v is not None and not isinstance(v, bool) and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


# ------------------------------------------------------------------------------ running sums
class _Config:
    """One (pair, policy spec, γ): its planned tasks and each finished task's contribution."""

    __slots__ = ("run", "gamma", "planned", "parts", "live_step")

    def __init__(self, run: tuple, gamma: int):
        self.run, self.gamma, self.planned, self.parts, self.live_step = run, gamma, set(), {}, 0


def measure(parts: dict, ar_parts: dict | None = None) -> dict:
    """Metrics of one config from its rows, by the definitions of ``jobs/metrics.py``.

    ``parts``: task_key → rows (question_id, repeat, new_tokens, wall_time, Σaccept_lengths,
    forwards, Σaccepted, Σdrafted). throughput = mean over (question, repeat) of
    Σnew_tokens / Σwall_time; mean accepted length = Σaccept_lengths / forwards; acceptance
    rate = Σaccepted / Σdrafted; speedup = throughput / the same mean of ``ar`` restricted to
    the questions this config ran (None without ``ar_parts``).
    """
    perq, al, steps, acc, dr = _sums(parts)
    out = {"questions": len({q for q, _ in perq}), "throughput": _mean_rate(perq.values()),
           "mean_accepted_length": al / steps if steps else None, "acceptance_rate": acc / dr if dr else None,
           "speedup": None}
    if ar_parts is not None and out["throughput"]:
        ran = {q for q, _ in perq}
        base = _mean_rate(v for (q, _), v in _sums(ar_parts)[0].items() if q in ran)
        out["speedup"] = out["throughput"] / base if base else None
    return out


def _sums(parts: dict):
    perq, al, steps, acc, dr = {}, 0, 0, 0, 0
    for rows in parts.values():
        for q, rep, nt, wt, a, s, ac, d in rows:
            x = perq.setdefault((q, rep), [0, 0.0])
            x[0] += nt
            x[1] += wt
            al, steps, acc, dr = al + a, steps + s, acc + ac, dr + d
    return perq, al, steps, acc, dr


def _mean_rate(pairs) -> float | None:
    rates = [n / w if w > 0 else float("nan") for n, w in pairs]
    return sum(rates) / len(rates) if rates else None


_COLS = ("task_key", "pair", "policy", "policy_spec", "gamma", "repeat", "question_id", "status", "new_tokens",
         "wall_time", "accept_lengths", "accepted", "drafted")


def _records(rows) -> list[dict]:
    """Rows of a pyarrow Table or a pandas DataFrame as dicts of the columns used here."""
    if rows is None:
        return []
    if isinstance(rows, pd.DataFrame):
        cols = [c for c in _COLS + ("ar_timing",) if c in rows.columns]
        return rows[cols].to_dict("records")
    cols = [c for c in _COLS + ("ar_timing",) if c in rows.column_names]
    return rows.select(cols).to_pylist()


def _total(xs) -> int:
    return int(sum(xs)) if xs is not None else 0


def _count(xs) -> int:
    return len(xs) if xs is not None else 0


# ------------------------------------------------------------------------------ sender thread
class _Sender(threading.Thread):
    """Sends queued (run_id, metrics) with ``log_batch``, coalesced per run; never raises."""

    def __init__(self, client):
        super().__init__(name="specsweep-mlflow", daemon=True)
        self.client, self.q, self.error, self.busy_s, self.calls = client, queue.Queue(), None, 0.0, 0

    def run(self):
        stop = False
        while not stop:
            items = [self.q.get()]
            while True:
                try:
                    items.append(self.q.get_nowait())
                except queue.Empty:
                    break
            by_run: dict = {}
            for item in items:
                if item is None:
                    stop = True
                else:
                    by_run.setdefault(item[0], []).extend(item[1])
            try:
                self._send(by_run)
            finally:
                for _ in items:
                    self.q.task_done()

    def _send(self, by_run: dict) -> None:
        if self.error is not None or not by_run:
            return
        t0 = time.perf_counter()
        try:
            for run_id, metrics in by_run.items():
                for i in range(0, len(metrics), MAX_BATCH):
                    self.client.log_batch(run_id, metrics=metrics[i:i + MAX_BATCH])
                    self.calls += 1
        except Exception as e:   # MLflow went away: the sweep goes on, the log is the record
            self.error = _first_line(e)
        self.busy_s += time.perf_counter() - t0

    def put(self, run_id: str, metrics: list):
        if metrics:
            self.q.put((run_id, metrics))

    def flush(self) -> None:
        """Wait until everything queued so far has been sent (or dropped after an error)."""
        self.q.join()

    def close(self, timeout: float = 60.0) -> bool:
        self.q.put(None)
        self.join(timeout)
        return not self.is_alive()


# ------------------------------------------------------------------------------ the tracker
class SweepTracker:
    """Streams one sweep into MLflow; see the module docstring for the layout and rules.

    Use: ``start(rows_already_in_the_log)`` before the first task, ``task_done(table)`` after
    each task is written to the log, then ``finish(...)`` (summarised) or ``close(status)``
    (interrupted / failed). ``timings`` holds the driver-thread seconds spent here and the
    sender's seconds inside MLflow calls.
    """

    def __init__(self, client, cfg, tasks: list[dict], uri: str | None = None):
        from actors.pair_actor import policy_spec

        self.client, self.cfg, self.uri = client, cfg, uri or cfg.tracking_uri
        self.output = str(Path(cfg.output).resolve())
        self.key = sweep_key(cfg.fingerprint(), cfg.output)
        self.runs: dict[tuple, dict] = {}            # (pair, spec) → {"id", "policy", "params"}
        self.configs: dict[tuple, _Config] = {}      # (pair, spec, γ) → _Config
        params_of = {policy_spec(n, p): (n, p) for n, p in cfg.policies}
        for t in tasks:
            for name, params, g in [("ar", {}, 0)] + [tuple(c) for c in t["configs"]]:
                spec = policy_spec(name, params) if name != "ar" else "ar"
                run = (t["pair"], spec)
                self.runs.setdefault(run, {"id": None, "policy": name, "params": params_of.get(spec, (name, params))[1]})
                self.configs.setdefault((t["pair"], spec, int(g)), _Config(run, int(g))).planned.add(t["task_key"])
        self.total_tasks = len(tasks)
        self.ok_tasks: set[str] = set()
        self.seen_tasks: set[str] = set()
        self.progress_step = 0                       # the sweep run's progress/* step (tasks logged so far)
        self.points: dict[tuple, float] = {}         # (run_id, key, step) → latest value
        self.parent = self.exp_id = None
        self.sender: _Sender | None = None
        self.timings = {"driver_s": 0.0, "start_s": 0.0, "finish_s": 0.0, "sender_s": 0.0, "tasks": 0}

    # ------------------------------------------------------------------ start
    def dataset_label(self) -> str:
        ds = self.cfg.dataset
        parts = [str(ds.get("source", "sample"))]
        for k in ("categories", "limit_per_category", "question_ids"):
            if ds.get(k):
                v = ds[k]
                parts.append(f"{k}={','.join(map(str, v)) if isinstance(v, (list, tuple)) else v}")
        return mask_credentials(" ".join(parts))[:250]

    def start(self, rows=None) -> str:
        """Create or reuse the sweep run and every policy run (status RUNNING); seed running sums from
        ``rows`` (the log of a resumed sweep) without logging them again. Returns the sweep run id."""
        from mlflow.entities import Param, RunTag

        t0 = time.perf_counter()
        c, cfg = self.client, self.cfg
        self.exp_id = experiment_id(c, cfg.experiment_name)
        found = c.search_runs([self.exp_id], filter_string=f"tags.`{SWEEP_KEY}` = '{self.key}'", max_results=10000)
        sweep = [r for r in found if r.data.tags.get(ROLE) == "sweep"]
        common = {SWEEP: cfg.fingerprint(), SWEEP_KEY: self.key, "output": self.output, "dataset": self.dataset_label(),
                  "mode": "live"}
        if sweep:
            self.parent = sweep[0].info.run_id
            c.update_run(self.parent, status="RUNNING")
            self._load_points(sweep[0])
        else:
            tags = {**common, ROLE: "sweep", "specsweep.config": json.dumps(cfg.public_dict(), default=str)[:5000],
                    "mlflow.note.content": f"Sweep {cfg.name!r} into {self.output}: its policy runs carry the tag "
                                           f"{SWEEP_KEY} = {self.key}."}
            self.parent = c.create_run(self.exp_id, run_name=f"{cfg.name} · sweep · {Path(self.output).name}",
                                       tags=_safe(tags)).info.run_id
            c.log_batch(self.parent, params=[Param(k, v) for k, v in _safe(self._sweep_params()).items()])
        by_key = {r.data.tags.get(RUN_KEY): r for r in found if r.data.tags.get(ROLE) == "policy"}
        for (pair, spec), run in self.runs.items():
            old = by_key.get(f"{pair}|{spec}")
            if old is not None:
                run["id"] = old.info.run_id
                c.update_run(run["id"], status="RUNNING")
                self._load_points(old)
                continue
            tags = {**common, ROLE: "policy", RUN_KEY: f"{pair}|{spec}", PARENT: self.parent, "pair": pair,
                    "policy": run["policy"], "policy_spec": spec,
                    "mlflow.note.content": f"{spec} on pair {pair}: metrics at step = initial γ; sweep run {self.parent}."}
            run["id"] = c.create_run(self.exp_id, run_name=f"{spec} · {pair}", tags=_safe(tags)).info.run_id
            params = {"pair": pair, "policy": run["policy"], "policy_spec": spec,
                      "gammas": ",".join(map(str, cfg.gammas)) if run["policy"] != "ar" else "0"}
            params.update({(k if k not in params else f"param.{k}"): v for k, v in sorted(run["params"].items())})
            c.log_batch(run["id"], params=[Param(k, v) for k, v in _safe(params).items()][:100],
                        tags=[RunTag("mlflow.source.name", "specsweep")])
        if rows is not None:
            self._ingest(_records(rows))
            for conf in self.configs.values():
                conf.live_step = measure(conf.parts)["questions"]
        self.sender = _Sender(c)
        self.sender.start()
        url = run_url(self.uri, self.exp_id, self.parent)
        print(f"MLflow: experiment {cfg.experiment_name!r}, sweep run {self.parent} in {mask_credentials(self.uri)}"
              + (f"; view it at {url}" if url else f"; open with: mlflow ui --backend-store-uri "
                                                     f"{mask_credentials(self.uri)} --workers 1"), file=sys.stderr)
        self.timings["start_s"] = time.perf_counter() - t0
        return self.parent

    def _sweep_params(self) -> dict:
        import platform

        cfg = self.cfg
        return {"python": platform.python_version(), "platform": platform.platform(), "fingerprint": cfg.fingerprint(),
                "pairs": ",".join(p.label for p in cfg.pairs), "gammas": ",".join(map(str, cfg.gammas)),
                "policies": len(cfg.policies), "repeats": cfg.repeats, "seed": cfg.seed,
                "max_new_tokens": cfg.generation.get("max_new_tokens"),
                "temperature": cfg.generation.get("temperature", 0.0), "output": self.output}

    def _load_points(self, run) -> None:
        """Remember the existing (key, step) points of a reused run so they are not written again."""
        for key in run.data.metrics:
            if key.startswith(LIVE):
                continue
            for m in sorted(self.client.get_metric_history(run.info.run_id, key), key=lambda m: m.timestamp):
                self.points[(run.info.run_id, key, m.step)] = m.value
        if run.data.tags.get(ROLE) == "sweep":
            self.progress_step = max([s for (rid, k, s) in self.points
                                      if rid == run.info.run_id and k == PROGRESS + "tasks_done"], default=0)

    # ------------------------------------------------------------------ per task
    def _ingest(self, records: list[dict]) -> set:
        """Replace each task's contribution with its rows; returns the configs touched."""
        touched, by_task = set(), {}
        for r in records:
            by_task.setdefault(r["task_key"], []).append(r)
        for tk, rows in by_task.items():
            self.seen_tasks.add(tk)
            if all(r["status"] == "ok" for r in rows):
                self.ok_tasks.add(tk)
            else:
                self.ok_tasks.discard(tk)
            parts: dict = {}
            for r in rows:
                if r["status"] != "ok" or (r.get("ar_timing") or "") == "last":
                    continue
                spec = "ar" if r["policy"] == "ar" else r["policy_spec"]
                k = (r["pair"], spec, int(r["gamma"]))
                parts.setdefault(k, []).append((r["question_id"], r["repeat"], r["new_tokens"] or 0, r["wall_time"] or 0.0,
                                                _total(r["accept_lengths"]), _count(r["accept_lengths"]),
                                                _total(r["accepted"]), _total(r["drafted"])))
            for k, conf in self.configs.items():
                if tk in conf.planned and (k in parts or tk in conf.parts):
                    conf.parts[tk] = parts.get(k, [])
                    touched.add(k)
        return touched

    def complete(self, conf: _Config) -> bool:
        return conf.planned <= self.ok_tasks

    def task_done(self, table) -> None:
        """Update the running sums with one finished task's rows and queue the affected runs' metrics."""
        t0 = time.perf_counter()
        touched = self._ingest(_records(table))
        now = int(time.time() * 1000)
        from mlflow.entities import Metric

        batches: dict = {}
        for k in touched:
            conf = self.configs[k]
            pair, spec, g = k
            ar = self.configs.get((pair, "ar", 0))
            m = measure(conf.parts, ar.parts if ar is not None and spec != "ar" else None)
            run_id = self.runs[conf.run]["id"]
            out = batches.setdefault(run_id, [])
            if m["questions"] > conf.live_step:
                conf.live_step = m["questions"]
                suffix = "" if spec == "ar" else f"_g{g:02d}"
                for name in ("throughput", "mean_accepted_length", "speedup"):
                    if _finite(m[name]) and not (spec == "ar" and name != "throughput"):
                        out.append(Metric(f"{LIVE}{name}{suffix}", float(m[name]), now, conf.live_step))
            if spec != "ar" and self.complete(conf):
                out.extend(self._points(run_id, {n: m[n] for n in AT_COMPLETION}, g, now))
        self.progress_step += 1
        batches.setdefault(self.parent, []).extend([
            Metric(PROGRESS + "tasks_done", float(len(self.seen_tasks)), now, self.progress_step),
            Metric(PROGRESS + "failed_tasks", float(len(self.seen_tasks - self.ok_tasks)), now, self.progress_step)])
        for run_id, metrics in batches.items():
            self.sender.put(run_id, metrics)
        self.timings["tasks"] += 1
        self.timings["driver_s"] += time.perf_counter() - t0

    def _points(self, run_id: str, values: dict, step: int, now: int) -> list:
        """Metrics for the (key, step) points whose value is new or changed (the once-only rule)."""
        from mlflow.entities import Metric

        out = []
        for key, v in values.items():
            if not _finite(v):
                continue
            v = float(v)
            old = self.points.get((run_id, key, step))
            if old is not None and math.isclose(old, v, rel_tol=1e-9, abs_tol=1e-12):
                continue
            self.points[(run_id, key, step)] = v
            out.append(Metric(key, v, now, int(step)))
        return out

    # ------------------------------------------------------------------ end
    def flush(self) -> None:
        """Wait until the metrics queued so far are in the tracking store (tests, progress checks)."""
        if self.sender is not None:
            self.sender.flush()

    def _stop_sender(self) -> None:
        if self.sender is None:
            return
        if not self.sender.close():
            print("MLflow: logging did not finish within 60 s; the Parquet log is complete: run the sweep again to "
                  "log what is missing", file=sys.stderr)
        elif self.sender.error:
            print(f"MLflow: logging stopped mid-sweep ({self.sender.error}); the Parquet log is complete: run the sweep "
                  "again to log what is missing", file=sys.stderr)
        self.timings["sender_s"] = self.sender.busy_s
        self.sender = None

    def finish(self, status: str, summary: pd.DataFrame | None, speed: pd.DataFrame | None, failed_rows: int = 0,
               artifacts=(), tables: dict | None = None) -> str:
        """Log the summary (per-γ points, across-γ metrics, artifacts) and set every run's status."""
        from jobs import metrics

        t0 = time.perf_counter()
        self._stop_sender()
        now = int(time.time() * 1000)
        c = self.client
        if summary is not None and len(summary):
            sp = speed.set_index(["pair", "policy_spec", "gamma"]) if speed is not None and len(speed) else None
            t2 = metrics.table2_from_summary(summary)
            for (pair, spec), run in self.runs.items():
                part = summary[(summary["pair"] == pair) & (summary["policy_spec"] == spec)]
                if part.empty:
                    continue
                batch = []
                if spec == "ar":
                    r = part.iloc[0]
                    for g in self.cfg.gammas:   # one measurement, drawn as a flat baseline across γ
                        batch += self._points(run["id"], {k: r[k] for k in ("throughput", "mean_accepted_length",
                                                                             "questions") if k in r}, g, now)
                    c.log_batch(run["id"], metrics=batch)
                    continue
                for _, r in part.iterrows():
                    g = int(r["gamma"])
                    vals = {k: r[k] for k in AT_COMPLETION + FROM_SUMMARY if k in r}
                    if sp is not None and (pair, spec, g) in sp.index:
                        row = sp.loc[(pair, spec, g)]
                        for col in row.index:
                            if col == "policy":
                                continue
                            if col.startswith("overall"):      # overall = "speedup", unless the summary has it
                                vals.setdefault("speedup" + col[len("overall"):], row[col])
                            else:
                                vals[f"speedup_{col}"] = row[col]
                    batch += self._points(run["id"], vals, g, now)
                batch += self._points(run["id"], self._across(part, t2, summary, pair, spec), 0, now)
                for i in range(0, len(batch), MAX_BATCH):
                    c.log_batch(run["id"], metrics=batch[i:i + MAX_BATCH])
        c.log_batch(self.parent, metrics=self._points(self.parent, {"configs": 0 if summary is None else len(summary),
                                                                    "failed_rows": failed_rows}, 0, now))
        for path in artifacts:
            c.log_artifact(self.parent, str(path))
        for name, table in (tables or {}).items():     # MLflow tables, viewable in the UI's artifact pane
            if table is not None and len(table):
                c.log_table(self.parent, data=table.reset_index(), artifact_file=f"tables/{name}.json")
        self._set_statuses(status)
        self.timings["finish_s"] = time.perf_counter() - t0
        return self.parent

    def _across(self, part, t2, summary, pair, spec) -> dict:
        out = {}
        best = part.loc[part["throughput"].idxmax()] if part["throughput"].notna().any() else None
        if best is not None:
            out.update({ACROSS + "best_gamma": int(best["gamma"]), ACROSS + "throughput_best": best["throughput"],
                        ACROSS + "throughput_mean": part["throughput"].mean()})
        if len(t2):
            row = t2[(t2["pair"] == pair) & (t2["policy_spec"] == spec)]
            if len(row):
                out[ACROSS + "table2_speedup_mean"] = row["mean"].iloc[0]
                out[ACROSS + "table2_speedup_std"] = row["std"].iloc[0]
        orc = summary[(summary["pair"] == pair) & (summary["policy"] == "oracle")]
        if len(orc) and not (part["policy"] == "oracle").all():
            out[ACROSS + "fraction_of_oracle"] = part["throughput"].mean() / orc["throughput"].mean()
        return out

    def close(self, status: str) -> None:
        """End an interrupted (KILLED) or failed (FAILED) sweep: flush what was queued, set statuses.

        Never raises: the sweep's own outcome is what the user must see."""
        try:
            self._stop_sender()
            if self.parent is not None:
                self._set_statuses(status)
        except Exception as e:
            print(f"MLflow: could not mark the runs {status} ({_first_line(e)})", file=sys.stderr)

    def _set_statuses(self, status: str) -> None:
        c = self.client
        for run in self.runs.values():
            if run["id"] is None:
                continue
            confs = [cf for cf in self.configs.values() if self.runs[cf.run] is run]
            done = all(self.complete(cf) for cf in confs)
            s = status if status == "KILLED" else ("FINISHED" if done or status == "FINISHED" else "FAILED")
            c.set_terminated(run["id"], status=s)
        c.set_terminated(self.parent, status=status)


def _safe(d: dict) -> dict:
    """Values as MLflow strings with credentials masked (params ≤ 6000 characters)."""
    return {k: mask_credentials(v if isinstance(v, str) else json.dumps(v, default=str))[:6000]
            for k, v in d.items() if v is not None}


# ------------------------------------------------------------------------------ reading back
def read_experiment(experiment: str, uri: str, output: str | None = None):
    """(summary, speedups, fraction of oracle) of one sweep in ``experiment``, for ``specsweep report``.

    The sweep is the one whose output folder is ``output``, else the latest started; with more
    than one sweep in the experiment a line on stderr names the one read. Per-γ values are the
    latest point at each step of each policy run's metrics."""
    from jobs.dataset import GROUP_ORDER

    client = client_for(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = [e.name for e in client.search_experiments()]
        raise SpecsweepError(f"no MLflow experiment {experiment!r} at {mask_credentials(uri)}; "
                             f"experiments: {', '.join(names) or 'none'}")
    sweeps = client.search_runs([exp.experiment_id], filter_string=f"tags.`{ROLE}` = 'sweep'",
                                order_by=["attributes.start_time DESC"], max_results=1000)
    if output is not None:
        want = str(Path(output).resolve())
        chosen = [s for s in sweeps if s.data.tags.get("output") == want]
        if not chosen:
            outs = sorted({s.data.tags.get("output", "?") for s in sweeps})
            raise SpecsweepError(f"experiment {experiment!r} holds no sweep with output {want}; "
                                 f"outputs: {', '.join(outs) or 'none'}")
        sweeps = chosen
    if not sweeps:
        raise SpecsweepError(f"experiment {experiment!r} has no specsweep sweep runs")
    sweep = sweeps[0]
    if len(sweeps) > 1:
        print(f"report: experiment {experiment!r} holds {len(sweeps)} sweeps; reading the latest, output "
              f"{sweep.data.tags.get('output')} (choose with --output DIR)", file=sys.stderr)
    runs = client.search_runs([exp.experiment_id], max_results=10000, filter_string=
                              f"tags.`{SWEEP_KEY}` = '{sweep.data.tags[SWEEP_KEY]}' and tags.`{ROLE}` = 'policy'")
    rows, speed = [], []
    for r in runs:
        t = r.data.tags
        hist = {}
        for key in r.data.metrics:
            if key.startswith((LIVE, ACROSS, PROGRESS)):
                continue
            for m in sorted(client.get_metric_history(r.info.run_id, key), key=lambda m: m.timestamp):
                hist.setdefault(m.step, {})[key] = m.value
        for step, vals in sorted(hist.items()):
            if "throughput" not in vals:
                continue
            base = {"pair": t["pair"], "policy": t["policy"], "policy_spec": t["policy_spec"],
                    "gamma": 0 if t["policy"] == "ar" else int(step)}
            rows.append({**base, **{k: v for k, v in vals.items() if not k.startswith("speedup_")}})
            if t["policy"] != "ar" and ("speedup" in vals or any(k.startswith("speedup_") for k in vals)):
                sp = {**base}
                for g in GROUP_ORDER:
                    name = "speedup" if g == "overall" else f"speedup_{g}"
                    for suffix in ("", "_lo", "_hi"):
                        if name + suffix in vals:
                            sp[g + suffix] = vals[name + suffix]
                    sp.setdefault(g, float("nan"))
                speed.append(sp)
            if t["policy"] == "ar":
                break
    if not rows:
        raise SpecsweepError(f"experiment {experiment!r}: the sweep into {sweep.data.tags.get('output')} has no "
                             "per-γ metrics yet")
    summary = pd.DataFrame(rows).drop_duplicates(["pair", "policy_spec", "gamma"])
    orc = summary[summary["policy"] == "oracle"]
    frac = pd.DataFrame()
    if len(orc):
        best = orc.groupby("pair")["throughput"].mean()
        f = summary[~summary["policy"].isin(["oracle", "ar"])].copy()
        f["fraction_of_oracle"] = f["throughput"] / f["pair"].map(best)
        frac = f[["pair", "policy_spec", "gamma", "fraction_of_oracle"]]
    return summary, pd.DataFrame(speed), frac
