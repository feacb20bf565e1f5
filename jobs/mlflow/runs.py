"""Which MLflow runs a sweep writes, how they are found again, and what they are tagged with.

Rules:
- Every run of one sweep carries ``specsweep.sweep_key`` = hash(config fingerprint, resolved
  output folder): a resumed sweep finds and reuses its runs, two output folders never share runs.
- The sweep run has ``specsweep.role = sweep``; each policy run has ``specsweep.role = policy``
  and ``specsweep.run_key`` = ``pair|policy spec|mode``, so the live and the replayed
  measurements of one policy are two runs with two histories that never merge. A live policy
  run written before runs carried a mode (key ``pair|policy spec``) is found and reused as the
  live run.
- A row's mode is its ``mode`` column, ``live`` where the column is missing, null or empty.
  ``ar`` is always live (the measured baseline of every ratio).
- A fresh sweep (``--fresh``) supersedes the runs of its key: they get the tag ``specsweep.superseded`` (when)
  and their ``specsweep.sweep_key`` gains the suffix ``~superseded``, so neither the sweep nor
  ``report --experiment`` finds them again; the fresh sweep's runs take the key.
- Run names are at most ``NAME_MAX`` characters (the ``runs.name`` column of MLflow's SQL stores): in a longer
  one the policy spec (or sweep name) is cut and ends in ``…`` and a hash of the whole name, so two long names
  stay distinct; the pair, mode or output after it stay whole.
- Every tag and param value passes :func:`redact` (``scheme://user:token@host`` →
  ``scheme://***@host``) before it reaches MLflow.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import time
from pathlib import Path

from jobs.redact import redact
from jobs.store.failures import first_line as plain
from policies.errors import SpecsweepError

ROLE, SWEEP, SWEEP_KEY, RUN_KEY, PARENT = ("specsweep.role", "specsweep.sweep", "specsweep.sweep_key",
                                           "specsweep.run_key", "specsweep.parent_run")
SUPERSEDED = "specsweep.superseded"
NAME_MAX = 250
KIND_TAG, KIND = "mlflow.experimentKind", "custom_model_development"
MODES = ("live", "replay")
LIVE, ACROSS, PROGRESS = "live/", "across_gamma/", "progress/"     # metric sections that are not per-γ values
ACROSS_PREFIXES = (LIVE, ACROSS, PROGRESS)
LIVE_KEYS = ("speedup", "mean_accepted_length", "acceptance_rate")    # streamed as live/<key>, step = γ
POSITIONS = "positions/"     # positions/accept_rate_pos_{i}: their own chart section, after the comparison


def first_line(e: BaseException) -> str:
    """``jobs.store.failures.first_line`` with credentials masked, ≤ 200 characters."""

    return redact(plain(e))[:200]


def safe(d: dict) -> dict:
    """Values as MLflow strings with credentials masked (params ≤ 6000 characters); None values dropped."""
    return {k: redact(v if isinstance(v, str) else json.dumps(v, default=str))[:6000]
            for k, v in d.items() if v is not None}


def finite(v) -> bool:
    """True for a real finite number (not a bool, not None, not NaN or ±inf)."""
    try:
        return v is not None and not isinstance(v, bool) and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def run_url(uri: str, experiment_id: str, run_id: str) -> str | None:
    """The UI address of a run on an http(s) tracking server, credentials masked; None for a local store."""
    if not uri.startswith(("http://", "https://")):
        return None
    return f"{redact(uri).rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}"


def runs_table_url(uri: str, experiment_id: str) -> str | None:
    """The UI address of an experiment's runs table (``…/#/experiments/ID/runs``: a fresh browser otherwise opens
    MLflow 3's GenAI overview), credentials masked; None for a local store."""
    if not uri.startswith(("http://", "https://")):
        return None
    return f"{redact(uri).rstrip('/')}/#/experiments/{experiment_id}/runs"


def runs_hint(uri: str, experiment_id: str | None, experiment_name: str) -> str:
    """Where a user compares a sweep's runs: the runs-table URL on a tracking server, else how to open it."""
    url = runs_table_url(uri, experiment_id) if experiment_id else None
    if url:
        return url
    return (f"mlflow ui --backend-store-uri {redact(uri)} --workers 1, then experiment {experiment_name!r} "
            f"(…/#/experiments/{experiment_id}/runs)")


def sweep_key(fingerprint: str, output: str) -> str:
    """Identity of one sweep's runs: the config fingerprint and the resolved output folder."""
    return hashlib.sha256(f"{fingerprint}\0{Path(output).resolve()}".encode()).hexdigest()[:16]


def artifact_root(uri: str) -> str | None:
    """Where a new experiment keeps its artifacts: beside a SQLite database (``sqlite:////abs/mlflow.db`` →
    ``/abs/mlruns``; MLflow's own default is ``./mlruns`` under the current folder, wherever the database is);
    None — the tracking store's default — for any other URI (a server, a file store keep their own)."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix) or uri[len(prefix):] in ("", ":memory:"):
        return None
    return (Path(uri[len(prefix):]).resolve().parent / "mlruns").as_uri()


def experiment_id(client, name: str, uri: str = "") -> str:
    """Get or create the experiment (artifacts at :func:`artifact_root` of the tracking ``uri``) and make the UI open
    it on its runs (``mlflow.experimentKind``). Created by another sweep between the lookup and the create
    (``RESOURCE_ALREADY_EXISTS``): that experiment is used.

    An explicit kind someone set is kept; a missing or inferred one is replaced."""
    exp = client.get_experiment_by_name(name)
    if exp is None:
        try:
            return client.create_experiment(name, artifact_location=artifact_root(uri), tags={KIND_TAG: KIND})
        except Exception as e:       # another sweep created it since the lookup: use theirs
            if getattr(e, "error_code", None) != "RESOURCE_ALREADY_EXISTS" or (exp := _named(client, name)) is None:
                raise
    if exp.lifecycle_stage == "deleted":
        raise SpecsweepError(f"MLflow experiment {name!r} is deleted; restore it or set `experiment:` to another name")
    kind = exp.tags.get(KIND_TAG, "")
    if kind in ("", "no_inferred_type") or kind.endswith("_inferred"):
        client.set_experiment_tag(exp.experiment_id, KIND_TAG, KIND)
    return exp.experiment_id


def _named(client, name: str):
    """The experiment called ``name`` (deleted ones included), found by a search; None when there is none."""
    from mlflow.entities import ViewType  # heavy: mlflow

    if "'" in name and '"' in name:                  # no quoting that the filter grammar accepts
        return client.get_experiment_by_name(name)
    q = '"' if "'" in name else "'"
    found = client.search_experiments(view_type=ViewType.ALL, filter_string=f"name = {q}{name}{q}")
    return next((e for e in found if e.name == name), None)

# ------------------------------------------------------------------------------ modes and run identity
def row_mode(value) -> str:
    """A row's mode: its ``mode`` value, ``live`` where that is missing, null, NaN or empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return "live"
    return str(value)


def planned_modes(task: dict, config) -> list[str]:
    """The modes a task runs one of its configs in: the task's ``live`` and ``replay`` lists when it
    has them (a replay sweep's plan), else ``live`` alone."""
    if "live" not in task and "replay" not in task:
        return ["live"]
    c = list(config)
    return [m for m in MODES if any(list(x) == c for x in task.get(m) or [])]


def run_key(pair: str, spec: str, mode: str) -> str:
    """The ``specsweep.run_key`` tag of one policy run."""
    return f"{pair}|{spec}|{mode}"


def find_policy_runs(found) -> dict:
    """run_key → run among a sweep's runs; a live run from before modes (key ``pair|spec``) counts as
    ``pair|spec|live`` unless a run with the full key exists."""
    out = {}
    for r in found:
        if r.data.tags.get(ROLE) != "policy" or SUPERSEDED in r.data.tags:
            continue
        key = r.data.tags.get(RUN_KEY, "")
        if key.count("|") == 1:
            out.setdefault(key + "|live", r)
        else:
            out[key] = r
    return out


def supersede(client, found) -> None:
    """Mark ``found`` (the runs of a sweep key) superseded by a fresh sweep (module docstring); a run still RUNNING
    (its sweep crashed) ends KILLED."""
    from mlflow.entities import RunTag  # heavy: mlflow

    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for r in found:
        if SUPERSEDED in r.data.tags:
            continue
        key = r.data.tags.get(SWEEP_KEY, "")
        client.log_batch(r.info.run_id, tags=[RunTag(SUPERSEDED, when), RunTag(SWEEP_KEY, f"{key}~superseded")])
        if r.info.status == "RUNNING":
            client.set_terminated(r.info.run_id, status="KILLED")


def fit_name(head: str, tail: str = "") -> str:
    """``head + tail`` when at most ``NAME_MAX`` characters, else ``head`` cut and ended by ``…`` and 10 hex digits of
    the whole name's hash, then ``tail`` (kept whole when it leaves room for 20 characters of ``head``)."""
    name = head + tail
    if len(name) <= NAME_MAX:
        return name
    mark = f"…{hashlib.sha256(name.encode()).hexdigest()[:10]}"
    if len(tail) > NAME_MAX - len(mark) - 20:
        head, tail = name, ""
    return head[:NAME_MAX - len(mark) - len(tail)] + mark + tail


def run_name(pair: str, spec: str, mode: str) -> str:
    """``SPEC · PAIR`` for a live run, ``SPEC · PAIR · replay`` for a replayed one; a long SPEC is cut
    (:func:`fit_name`)."""
    return fit_name(spec, f" · {pair}" + ("" if mode == "live" else f" · {mode}"))


def base_pair(pair: str) -> str:
    """A row's pair label without its ``@B{B}`` batch suffix (``actors/loading/schema.py``'s ``batch_label`` undone)."""
    return re.sub(r"@B\d+$", "", pair)


def policy_tags(common: dict, parent: str, pair: str, policy: str, spec: str, mode: str) -> dict:
    """Tags of one policy run (before masking): identity, the UI's "Group by" fields and a description."""
    how = ("replayed from the ar run's trace, wall times predicted by the actor's cost model"
           if mode == "replay" else "measured live")
    return {**common, ROLE: "policy", RUN_KEY: run_key(pair, spec, mode), PARENT: parent, "pair": pair,
            "policy": policy, "policy_spec": spec, "mode": mode,
            "mlflow.note.content": f"{spec} on pair {pair} ({how}): metrics at step = initial γ; sweep run {parent}."}


def policy_params(pair: str, policy: str, spec: str, mode: str, gammas, params: dict) -> dict:
    """Params of one policy run: identity, the γ list and the policy's resolved parameters (≤ 100)."""
    out = {"pair": pair, "policy": policy, "policy_spec": spec, "mode": mode,
           "gammas": ",".join(map(str, gammas)) if policy != "ar" else "0"}
    out.update({(k if k not in out else f"param.{k}"): v for k, v in sorted(params.items())})
    return dict(list(safe(out).items())[:100])
