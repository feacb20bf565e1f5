"""Streaming a sweep into MLflow: running sums per config and the thread that sends metrics.

Rules:
- A config is (pair, policy spec, initial γ, mode). Its running sums hold, per finished task,
  that task's rows of the config; a re-run task replaces its contribution, never adds to it.
- :func:`measure` computes a config's metrics from those sums by the definitions of
  ``jobs/report/metrics.py`` (same numbers as the summary's point estimates).
- Streaming never waits on MLflow: the driver thread only queues ``(run id, metrics)``; one
  background thread (:class:`Sender`) sends them with ``log_batch`` (≤ 1000 metrics a call),
  coalescing whatever queued up per run. After the first MLflow error it drops what is queued
  and remembers the error (one line, credentials masked); it never raises.
"""
from __future__ import annotations

import queue
import threading
import time

import pandas as pd

from jobs.mlflow.runs import first_line
from jobs.report.derived import Counters, figures, time_untrusted

MAX_BATCH = 1000                    # MLflow's limit of metrics per log_batch call
COLUMNS = ("task_key", "pair", "policy", "policy_spec", "gamma", "repeat", "question_id", "status", "new_tokens",
           "wall_time", "accept_lengths", "accepted", "drafted", "ar_timing", "mode", "time_reliable")


class Config:
    """One (pair, policy spec, γ, mode): its planned tasks and each finished task's contribution."""

    __slots__ = ("run", "gamma", "planned", "parts", "live_step")

    def __init__(self, run: tuple, gamma: int, planned=()):
        self.run, self.gamma, self.planned, self.parts, self.live_step = run, gamma, set(planned), {}, 0


def measure(parts: dict, ar_parts: dict | None = None) -> dict:
    """Metrics of one config from its rows, by :func:`jobs.report.derived.figures`.

    ``parts``: task_key → rows (question_id, repeat, new_tokens, wall_time, Σaccept_lengths,
    forwards, Σaccepted, Σdrafted), summed into one :class:`~jobs.report.derived.Counters` per config
    (a question × repeat is one throughput sample). speedup = the config's throughput / ``ar``'s, both over only
    the questions both ran (None without ``ar_parts``; the report's pairing, ``QuestionSums.paired``). Undefined
    figures are None.
    """
    c = _counters(parts)
    f = figures(c)
    out = {"questions": len({q for q, _ in c.per_question}), "throughput": f["throughput"] if f["questions"] else None,
           "mean_accepted_length": f["mean_accepted_length"] if c.forwards else None,
           "acceptance_rate": f["acceptance_rate"] if c.drafted else None, "speedup": None}
    if ar_parts is not None and out["throughput"]:
        ar = _counters(ar_parts)
        both = {q for q, _ in c.per_question} & {q for q, _ in ar.per_question}
        mine, base = (figures(Counters(per_question={k: v for k, v in x.per_question.items() if k[0] in both}))
                      ["throughput"] if both else None for x in (c, ar))
        out["speedup"] = mine / base if base else None
    return out


def _counters(parts: dict) -> Counters:
    c = Counters()
    for rows in parts.values():
        for q, rep, nt, wt, a, s, ac, d in rows:
            c.add((q, rep), nt, wt, a, s, ac, d)
    return c


def records(rows) -> list[dict]:
    """Rows of a pyarrow Table or a pandas DataFrame as dicts of the columns used here."""
    if rows is None:
        return []
    if isinstance(rows, pd.DataFrame):
        return rows[[c for c in COLUMNS if c in rows.columns]].to_dict("records")
    return rows.select([c for c in COLUMNS if c in rows.column_names]).to_pylist()


def contribution(r: dict) -> tuple:
    """One ok row as the tuple :func:`measure` sums (an untrusted predicted time counts as NaN: no time figures)."""
    al = r["accept_lengths"]
    wall = float("nan") if time_untrusted(r.get("time_reliable")) else (r["wall_time"] or 0.0)   # no time figure
    return (r["question_id"], r["repeat"], r["new_tokens"] or 0, wall,
            int(sum(al)) if al is not None else 0, len(al) if al is not None else 0,
            int(sum(r["accepted"])) if r["accepted"] is not None else 0,
            int(sum(r["drafted"])) if r["drafted"] is not None else 0)


class Sender(threading.Thread):
    """Sends queued (run_id, metrics and tags) with ``log_batch``, coalesced per run; never raises."""

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
            for run_id, items in by_run.items():
                tags = [x for x in items if not hasattr(x, "step")]          # RunTag: set once, e.g. untrusted times
                metrics = [x for x in items if hasattr(x, "step")]
                if tags:
                    self.client.log_batch(run_id, tags=tags)
                    self.calls += 1
                for i in range(0, len(metrics), MAX_BATCH):
                    self.client.log_batch(run_id, metrics=metrics[i:i + MAX_BATCH])
                    self.calls += 1
        except Exception as e:   # MLflow went away: the sweep goes on, the log is the record
            self.error = first_line(e)
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
