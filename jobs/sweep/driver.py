"""The sweep driver: one validated config run end to end (:func:`run_sweep`).

Order of work: validate the config and select questions (no Ray, no model) → check
the output folder and the MLflow URI → connect to / start Ray and check its
resources → place ``actors`` PairActors per pair → fan out tasks (question × block
of configs, ``ar`` included) with at most two in flight per actor, streaming
results with ``ray.wait`` into the Parquet log → summarise into MLflow and
Spec-Bench answer files. A re-run with the same config and output folder skips
every task already in the log and reuses the MLflow runs. The command line (flags, exit statuses, temperature
lists) is ``jobs/sweep/command.py``.
"""
from __future__ import annotations

import hashlib
import logging
import sys
import time
from pathlib import Path

from tqdm import tqdm

from actors.loading.schema import config_key, to_table
from cluster.backends import ActorSpec, ActorStartError, InProcessBackend, RayBackend
from cluster.ray_session import SweepCluster
from cluster.ray_setup import check_address, check_resources, target_address
from cluster.scale_up import wait_for_gpus
from jobs.config import SweepConfig
from jobs.dataset import load_questions
from jobs.mlflow.client import client_for
from jobs.mlflow.runs import runs_hint
from jobs.mlflow.tracking import SweepTracker
from jobs.redact import redact
from jobs.report import metrics
from jobs.report.agreement import (agreement_table, agreement_text, bias_corrected, bias_text, corrected_text,
                                   mark_untrusted, mode_shown, pair_bias, primary_rows, replay_bias)
from jobs.report.costs import costs_text, read_actor_infos, untrusted_reasons, untrusted_text
from jobs.report.derived import position_tables, trusted_times
from jobs.report.headline import headline, per_gamma_text
from jobs.report.positions import with_positions, write_positions
from jobs.report.tables import folder_report, specbench_layout, table2_layout
from jobs.report.token_view import token_views
from jobs.store.answers import write_all
from jobs.store.durable import write_parquet
from jobs.store.failures import first_line, record_error, root_cause  # noqa: F401  (root_cause: API)
from jobs.store.output import OutputLock, check_usable, record_written, write_texts
from jobs.store.parquet_log import ParquetLog
from jobs.sweep.actor_info import store_batch_surface, write_actor_info
from jobs.sweep.plan import describe_plan, plan_tasks  # noqa: F401  (plan_tasks: part of this module's API)
from jobs.sweep.preflight import actor_max_draft, check_pairs, check_paths, first_run_note
from jobs.sweep.signals import raise_if_swallowed, ray_start, say
from policies.errors import SpecsweepError


def _pair_kwargs(p, gammas=()) -> dict:
    return {"target": p.target, "draft": p.draft, "dtype": p.dtype, "device": p.device, "quantization": p.quantization,
            "draft_quantization": p.draft_quantization, "trust_remote_code": p.trust_remote_code,
            "template": p.template, "name": p.label, "engine": p.engine, "inductor": p.inductor,
            "quant_backend": p.quant_backend, "max_context": p.max_context,
            "num_gpus": 1 if p.device == "cpu" else max(1, int(p.num_gpus)),   # on CPU GPUs are only reserved
            "max_draft": actor_max_draft(gammas)}


def actor_specs(cfg: SweepConfig, warmup_question: dict, learnt: dict | None = None) -> list:
    """One :class:`~cluster.backends.ActorSpec` per pair: what its PairActors are built with. ``learnt``: per pair
    label, the responses of the tasks a resumed sweep already ran (:func:`learnt_before`)."""

    return [ActorSpec(p.label, {"pair": _pair_kwargs(p, cfg.gammas), "label": p.label, "calibrate": cfg.calibrate_settings(),
                                "warmup_question": warmup_question, "warmup": cfg.warmup, "task_warmup": cfg.task_warmup,
                                "generation": cfg.generation, "replay": cfg.replay_settings(),
                                **({"learnt": learnt[p.label]} if learnt and learnt.get(p.label) else {})},
                      copies=p.actors, num_gpus=p.num_gpus, num_cpus=p.num_cpus,
                      name=f"specsweep-{cfg.fingerprint()}-{p.label}") for p in cfg.pairs]


def learnt_before(df) -> dict[str, list]:
    """What a resumed sweep's actors learn before their first task, so a drafter with a memory of responses
    (``suffix``) starts where the interrupted sweep's left it (``actors/pair_actor.py``, "Request order"): per pair
    label, ``(task_key, question ids, responses per question per turn)`` of every finished task, in the order the
    tasks finished, from each task's first ``ar`` run (repeat 0, live, ok). With several actors per pair each
    resumed actor learns them all (which actor ran which task is not reproducible in any case)."""
    if df is None or not len(df):
        return {}
    rows = df[(df["ar_timing"] == "first") & (df["repeat"] == 0) & (df["mode"] == "live") & (df["status"] == "ok")]
    out: dict[str, list] = {}
    if not len(rows):
        return out
    rows = rows.assign(label=rows["pair"].str.replace(r"@B\d+$", "", regex=True))
    finished = rows.groupby("task_key")["tstamp"].max().sort_values(kind="stable")
    for key in finished.index:
        task = rows[rows["task_key"] == key].sort_values(["question_id", "turn"], kind="stable")
        qids = list(dict.fromkeys(int(q) for q in task["question_id"]))
        responses = [[list(map(int, t)) for t in task[task["question_id"] == q]["token_ids"]] for q in qids]
        out.setdefault(str(task["label"].iloc[0]), []).append((key, qids, responses))
    return out


def failure_table(task: dict, reason: str):
    rows = [{"task_key": task["task_key"], "config_key": config_key(task["pair"], "task", 0), "pair": task["pair"],
             "policy": "task", "policy_spec": "task", "gamma": 0, "repeat": 0, "question_id": task["question"]["question_id"],
             "category": task["question"]["category"], "turn": 0, "status": "failed", "error": reason[:1000]}]
    return to_table(rows)


def run_sweep(cfg: SweepConfig, *, address: str | None = None, fresh: bool = False, dry_run: bool = False,
              log_mlflow: bool = True, on_task_done=None, handle_sigterm: bool = False,
              backend: str = "ray", verbose: bool = False, wait_for_gpus_s: float = 0) -> dict:
    """Run (or resume) a sweep; returns a summary dict. ``on_task_done(n)`` is a test hook.

    ``backend``: ``"ray"`` (actors on the Ray cluster at ``address``, or a local one) or
    ``"inprocess"`` (the same actors and tasks in this process, no Ray: tests, debugging).
    ``wait_for_gpus_s``: on Ray, first ask the cluster's autoscaler for the GPU actors' nodes and wait up to this
    long (``cluster/scale_up.py``); 0 checks the cluster as it is.

    ``handle_sigterm``: while and after Ray starts (it installs a SIGTERM handler that
    exits the process), SIGTERM raises :class:`Terminated` instead, so the sweep stops as
    on Ctrl-C: actors killed, lock released, finished tasks kept (``jobs/sweep/signals.py``).
    A local cluster the sweep starts is recorded in the output folder and shut down at the
    end; one a killed sweep left there is stopped first (``cluster/ray_session.py``).

    Every check runs before Ray starts or anything is written (questions, output folder,
    the folder's previous config, MLflow, the Ray address, models and tokenizers); then the
    output folder is locked for the rest of the sweep.
    """
    ds = cfg.dataset
    questions = load_questions(ds.source, ds.categories, ds.limit_per_category, ds.question_ids)
    tasks = plan_tasks(cfg, questions)
    if cfg.mode != "live" and not dry_run:
        from jobs.sweep.plan import replay_partition  # heavy: torch

        for note in replay_partition(cfg)[2]:
            say(f"specsweep: {note}")
    if dry_run:
        check_paths(cfg, tokenizer=False)     # the local model files, as check_pairs below checks them
        print(describe_plan(cfg, questions, tasks))
        return {"tasks": len(tasks), "dry_run": True}

    check_usable(cfg.output, fresh=fresh)
    log = ParquetLog(cfg.output)
    log.check(cfg.fingerprint(), fresh=fresh)
    if backend not in ("ray", "inprocess"):
        raise SpecsweepError(f"backend must be 'ray' or 'inprocess', got {backend!r}")
    if backend == "ray":
        check_address(address)
    # a tracking server is probed before the models are checked (nothing is written); a local store
    # (sqlite/file) is opened only after every check, so a refusal leaves no database behind
    local_store = cfg.tracking_uri.split(":", 1)[0].lower() in ("sqlite", "file")
    client = _open_tracking(cfg) if log_mlflow and not local_store else None
    check_pairs(cfg, local_cluster=backend != "ray" or target_address(address) is None)
    raise_if_swallowed()             # an interrupt swallowed while the models loaded: stop before any store is made
    if log_mlflow and client is None:
        client = _open_tracking(cfg)
    raise_if_swallowed()
    with OutputLock(cfg.output), SweepCluster(cfg.output) as ray_cluster:
        if backend == "ray":
            with ray_start(handle_sigterm):
                resources = ray_cluster.connect(address)
            if wait_for_gpus_s > 0:
                wait_for_gpus([(p.label, p.num_gpus) for p in cfg.pairs if p.num_gpus for _ in range(p.actors)],
                              wait_for_gpus_s, _starting_line)
                resources = ray_cluster.connect(address)         # the cluster as it is now
            check_resources(sum(p.num_gpus * p.actors for p in cfg.pairs),
                            sum(p.num_cpus * p.actors for p in cfg.pairs if not p.num_gpus), resources)
            runner = RayBackend(resources, on_started=ray_cluster.record, progress=_starting_line)
        else:
            runner = InProcessBackend(progress=_starting_line)
        # checks the folder's config again (now that no other sweep can write here), then writes
        cleared = log.prepare(cfg.fingerprint(), cfg.public_dict(), fresh=fresh)
        if cleared is not None and (cleared.removed or cleared.kept):
            say(f"specsweep: {cleared.line()}")
        done = log.done_keys()
        todo = [t for t in tasks if t["task_key"] not in done]
        tracker = None
        try:
            if client is not None:   # the sweep's runs exist (RUNNING) before the first task (KILLED if stopped here)
                tracker = SweepTracker(client, cfg, tasks, fresh=fresh)
                tracker.start(log.read() if log.has_results() else None)
            failed_tasks = 0
            if todo:
                failed_tasks = _fan_out(cfg, todo, len(tasks), len(done), log, runner, questions, on_task_done,
                                        tracker)
            return summarise(cfg, log, tracker, failed_tasks, verbose)
        except KeyboardInterrupt:        # Ctrl-C and SIGTERM
            if tracker is not None:
                tracker.close("KILLED")
            raise
        except BaseException:
            if tracker is not None:
                tracker.close("FAILED")
            raise


def _open_tracking(cfg: SweepConfig):
    """The MLflow client of the sweep's tracking URI, or one line saying why it cannot be opened."""
    _quiet_mlflow()
    try:
        return client_for(cfg.tracking_uri)
    except SpecsweepError as e:   # the message quotes the URI: never print its credentials
        raise SpecsweepError(str(e).replace(cfg.tracking_uri, redact(cfg.tracking_uri))) from None
    except Exception as e:  # an MLflow store that cannot be opened fails in many ways
        raise SpecsweepError(f"cannot open the MLflow tracking URI {redact(cfg.tracking_uri)!r} "
                             f"({first_line(e)}); default is sqlite:///mlflow.db") from None


def _starting_line(line: str) -> None:
    say(f"specsweep: {line}")


def _quiet_mlflow() -> None:
    """MLflow sets its own logger to INFO when imported: keep its store-creation chatter off the console."""
    import mlflow  # noqa: F401  (configures the "mlflow" logger; lower it only after that)

    for name in ("mlflow", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _fan_out(cfg, todo, total, already, log, backend, questions, on_task_done, tracker=None) -> int:
    """Start the actors (a resumed sweep's learn what the finished tasks answered: :func:`learnt_before`), run
    ``todo`` on them and write every finished task at once; returns failed tasks."""
    q0 = questions[0]
    warm_q = {"question_id": q0.question_id, "category": q0.category, "turns": list(q0.turns)}
    t_start = time.time()
    say(f"specsweep: starting {sum(p.actors for p in cfg.pairs)} actor(s): models, cost calibration, warm-up"
        + (", cost-model fit runs" if cfg.mode != "live" else "") + first_run_note(cfg))
    try:
        try:
            infos = backend.start(actor_specs(cfg, warm_q, learnt_before(log.read()) if already else None))
        except ActorStartError as e:   # the actor could not start: models, tokenizer, device, calibration
            path = record_error(cfg, f"starting the actors of pair {e.label}", e.cause)
            raise SpecsweepError(f"pair {e.label}: the actor failed to start: {root_cause(e.cause)} "
                                 f"(full traceback in {path})") from None
        write_actor_info(cfg, infos)
        raise_if_swallowed()
        say(f"specsweep: actors ready in {time.time() - t_start:.0f} s; {len(todo)} task(s) to run")
        bar = tqdm(total=total, initial=already, desc=f"sweep {cfg.name}", unit="task", dynamic_ncols=True)
        counts = {"failed": 0, "tokens": 0, "t0": time.time()}

        def on_result(task, result, error) -> None:
            if error is not None:
                path = record_error(cfg, f"task {task['task_key']}", error)
                result = {"rows": failure_table(task, f"{root_cause(error)} (full traceback in {path})")}
            table = result["rows"]
            if result.get("traces") is not None:     # before the log entry: a logged task always has its traces
                write_traces_table(cfg, task, result["traces"])
            log.write(table)
            if tracker is not None:      # queues the affected runs' metrics; MLflow calls happen in its thread
                tracker.task_done(table)
            if any(s != "ok" for s in table.column("status").to_pylist()):
                counts["failed"] += 1
            counts["tokens"] += sum(v or 0 for v in table.column("new_tokens").to_pylist())
            bar.update(1)
            bar.set_postfix(tok_s=f"{counts['tokens'] / max(1e-9, time.time() - counts['t0']):.1f}",
                            failed=counts["failed"])
            if on_task_done:
                on_task_done(bar.n)
            raise_if_swallowed()

        try:
            backend.run(todo, on_result)
        finally:
            bar.close()
        store_batch_surface(cfg, backend)
        say(f"specsweep: {len(todo)} task(s) done in {time.time() - counts['t0']:.0f} s")
        return counts["failed"]
    finally:
        backend.stop()


def write_traces_table(cfg: SweepConfig, task: dict, table) -> Path:
    """``OUTPUT/traces/<task>.parquet``: the task's traces (one row per turn), written atomically."""

    folder = Path(cfg.output) / "traces"
    folder.mkdir(exist_ok=True)
    path = folder / f"{hashlib.sha1(task['task_key'].encode()).hexdigest()[:16]}.parquet"
    record_written(path, cfg.output)
    return write_parquet(table, path)


def summarise(cfg: SweepConfig, log: ParquetLog, tracker, failed_tasks: int, verbose: bool = False) -> dict:
    """Write the sweep's tables, figures, answers and report.md, finish its MLflow runs and end with the headline
    (``jobs/report/headline.py``); the per-γ and replay tables go to the console only when ``verbose``."""

    t0 = time.time()
    df = log.read()
    failed_rows = int((df["status"] != "ok").sum())
    everything = df[df["status"] == "ok"]
    out = Path(cfg.output)
    untrusted = untrusted_reasons(str(out), everything)
    shown = mark_untrusted(primary_rows(everything, mode_shown(cfg.mode)), untrusted)   # one mode per config
    ok = trusted_times(shown)                             # no time figure from an untrusted prediction
    agreement = agreement_table(everything)
    if len(agreement):
        _csv(agreement, out / "replay_agreement.csv")
        bias = replay_bias(everything)
        _csv(bias, out / "replay_bias.csv")
        if verbose:
            print(agreement_text(agreement), file=sys.stderr)
            print(bias_text(bias), file=sys.stderr)
    bound = metrics.bound_text(metrics.bound_check(everything), metrics.fraction_of_oracle(ok) if len(ok) else ok)
    for text in ((costs_text(read_actor_infos(str(out))) if verbose else ""), untrusted_text(untrusted)):
        if text:
            print(text, file=sys.stderr)
    if untrusted and tracker is not None:
        tracker.mark_untrusted(untrusted)
    summary = metrics.config_summary(ok) if len(ok) else None
    speed = metrics.speedup_vs_ar(ok) if len(ok) else None
    if len(agreement) and speed is not None:
        corrected = bias_corrected(speed, ok, pair_bias(everything))
        if len(corrected):
            _csv(corrected, out / "speedup_bias_corrected.csv")
            if verbose:
                print(corrected_text(corrected), file=sys.stderr)
    result = {"rows": len(df), "failed_rows": failed_rows, "failed_tasks": failed_tasks, "output": str(out)}
    if failed_rows:
        errors = df.loc[df["status"] != "ok", "error"].dropna()
        result["first_error"] = str(errors.iloc[0]).splitlines()[0][:300] if len(errors) else ""
    if summary is None:
        if tracker is not None:
            tracker.finish("FAILED", None, None, failed_rows)
        return result
    pos, hist = position_tables(ok)                       # acceptance by draft position (jobs/report/positions.py)
    summary = with_positions(summary, pos)
    write_positions(pos, hist, out)
    _csv(summary, out / "summary.csv")
    if len(speed):
        _csv(speed, out / "speedup_vs_ar.csv")
    t2 = metrics.table2(ok)
    if len(t2):
        _csv(t2, out / "table2.csv")
    write_all(ok[ok["wall_time"].notna()], out / "answers")     # answer files carry wall times: trusted ones only
    from jobs.report.figures import all_figures  # heavy: matplotlib

    figures = all_figures(summary, ok, out / "figures", positions=(pos, hist)) \
        + token_views(cfg.pairs, ok, out / "token_views")
    if tracker is not None:
        arts = [p for p in (out / "summary.csv", out / "speedup_vs_ar.csv", out / "table2.csv", out / "actors.json",
                            out / "replay_agreement.csv", out / "replay_bias.csv", out / "speedup_bias_corrected.csv")
                if p.exists()] + figures

        tables = {"table2": table2_layout(summary, t2), "specbench": specbench_layout(summary, speed), "summary": summary}
        status = "FINISHED" if outcome(result)[0] == EXIT_OK else "FAILED"
        result["parent_run"] = tracker.finish(status, summary, speed, failed_rows, arts, tables, t2)
        result["mlflow_timings"] = dict(tracker.timings)
    record_written(out / "report.md", out)
    write_texts({out / "report.md": folder_report(str(out), "md")})      # a synced twin renamed over it
    if verbose:
        print(per_gamma_text(summary, speed, failed_rows), file=sys.stderr)
    say(f"specsweep: report, answers, figures and MLflow runs in {time.time() - t0:.0f} s")
    where = [f"full report: {out / 'report.md'} · figures: {out / 'figures'} · per-γ tables: specsweep report {out}"]
    if tracker is not None:
        where.append(f"MLflow runs: {runs_hint(tracker.uri, tracker.exp_id, cfg.experiment_name)}")
    if failed_rows:
        where.append(f"failed rows: {failed_rows} (see {out / 'log'})")
    print(headline(summary, t2, bound, where), file=sys.stderr)
    result["configs"] = len(summary)
    return result


def _csv(df, path: Path) -> None:
    """Write a table of the output folder as CSV (noted first in its manifest), whole or not at all."""
    record_written(path, path.parent)
    write_texts({path: df.to_csv(index=False)})


EXIT_OK, EXIT_BAD_INPUT, EXIT_FAILED_ROWS, EXIT_INTERNAL = 0, 2, 3, 4


def outcome(res: dict) -> tuple[int, str | None]:
    """Exit status and one-line summary of a finished sweep: 0 only if every row and task succeeded."""
    rows, bad, tasks = res.get("rows", 0), res.get("failed_rows", 0), res.get("failed_tasks", 0)
    if rows and not bad and not tasks:
        return EXIT_OK, None
    what = "no rows at all" if not rows else f"{bad} of {rows} rows failed"
    first = f"; first error: {res['first_error']}" if res.get("first_error") else ""
    return EXIT_FAILED_ROWS, (f"sweep finished with failures: {what}, {tasks} task(s) failed{first}; "
                              f"details in {res.get('output')}/log")
