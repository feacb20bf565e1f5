"""The MLflow UI shows a sweep: a real ``mlflow server`` and headless Chromium on a store the tracker wrote.

The store is built by ``SweepTracker`` from scripted rows (no model, no Ray): the live runs of
``fixed`` and ``gammatune`` with ``ar``, and the replayed twin of each policy. The server runs
on 127.0.0.1 with one worker; Chromium renders the UI's JavaScript app and dumps the DOM, and
the assertions read what a person would see:

* the runs table lists every (pair, policy, mode) run by name and names the dataset;
* the chart view draws ``throughput`` (step = initial γ) for the policy runs;
* a policy run's artifact view shows its ``gamma_curve.png``;
* an empty experiment lists none of these names (so the checks above cannot pass vacuously).

The screenshot of the chart view is kept in ``tmp_path`` (its path is printed). Skipped, with
one line, only when no Chromium is installed.
"""
from __future__ import annotations

import html
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("mlflow")

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome", "headless_shell")
                 if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install -y chromium)")

RUNS = ["ar · tiny", "fixed · tiny", "gammatune:eta=0.5 · tiny", "fixed · tiny · replay",
        "gammatune:eta=0.5 · tiny · replay", "surface · sweep · out"]
SERVER_START_S = 60


def build_store(tmp: Path) -> tuple[str, str, str]:
    """A sweep's tracking store in ``tmp``; returns (experiment id, empty experiment id, run id of fixed · tiny)."""
    import pyarrow as pa

    from jobs import metrics
    from jobs.mlflow_runs import KIND, KIND_TAG
    from jobs.tracking import SweepTracker
    from tests.mlflow_rows import client, make_cfg, replayed, scripted_table, tasks_of, with_mode

    cfg = make_cfg(tmp)
    c = client(cfg)
    tracker = SweepTracker(c, cfg, tasks_of(cfg))
    tracker.start()
    tables = []
    for t in tasks_of(cfg):
        live = scripted_table(t)
        tables += [with_mode(live, "live"), replayed(live)]
        tracker.task_done(pa.concat_tables(tables[-2:]))
    df = pa.concat_tables(tables).to_pandas()
    replay_first = df[(df["mode"] == "replay") | (df["policy"] == "ar")]
    tracker.finish("FINISHED", metrics.config_summary(replay_first), metrics.speedup_vs_ar(replay_first))
    exp = c.get_experiment_by_name(cfg.experiment_name).experiment_id
    empty = c.create_experiment("empty", tags={KIND_TAG: KIND})
    fixed = next(r for r in c.search_runs([exp]) if r.info.run_name == "fixed · tiny").info.run_id
    return exp, empty, fixed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """(base URL, experiment id, empty experiment id, fixed run id, folder) of a running server."""
    tmp = tmp_path_factory.mktemp("ui")
    cwd = os.getcwd()
    os.chdir(tmp)                      # a sqlite store keeps artifacts under ./mlruns
    try:
        ids = build_store(tmp)
    finally:
        os.chdir(cwd)
    port = free_port()
    log = open(tmp / "server.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
                               f"sqlite:///{tmp}/mlflow.db", "--host", "127.0.0.1", "--port", str(port),
                               "--workers", "1"], cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + SERVER_START_S
        while True:
            try:
                if urllib.request.urlopen(base + "/health", timeout=2).status == 200:
                    break
            except OSError:
                pass
            if server.poll() is not None or time.time() > deadline:
                raise AssertionError(f"mlflow server did not come up: {(tmp / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield base, *ids, tmp
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def render(url: str, folder: Path, size: str = "1600,1000", screenshot: Path | None = None, budget_ms: int = 30000) -> str:
    """The DOM headless Chromium renders for ``url`` (JavaScript run for ``budget_ms`` of virtual time)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
           f"--user-data-dir={folder / 'chromium-profile'}", f"--window-size={size}",
           f"--virtual-time-budget={budget_ms}", "--dump-dom"]
    if screenshot is not None:
        cmd.append(f"--screenshot={screenshot}")
    out = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=60, cwd=folder)
    return out.stdout


def visible_text(dom: str) -> list[str]:
    """The text nodes of a DOM dump, in order (scripts and styles dropped)."""
    body = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", dom, flags=re.S)
    return [t for t in (html.unescape(x).strip() for x in re.split(r"<[^>]+>", body)) if t]


def render_until(url: str, folder: Path, done, **kw) -> list[str]:
    """Render ``url`` until ``done(text)`` holds, at most three times (a slow machine may need a second look)."""
    text: list[str] = []
    for budget in (30000, 45000, 60000):
        text = visible_text(render(url, folder, budget_ms=budget, **kw))
        if done(text):
            break
    return text


def test_runs_table_lists_every_run_and_the_dataset(ui):
    base, exp, _, _, tmp = ui
    shot = tmp / "runs_table.png"
    text = render_until(f"{base}/#/experiments/{exp}/runs", tmp, lambda t: "matching runs" in t, screenshot=shot)
    assert "Training runs" in text, text[:40]                   # the experiment opened on its runs, not GenAI
    missing = [r for r in RUNS if r not in text]
    assert not missing, f"runs table lacks {missing}; it shows {text}"
    datasets = [t for t in text if re.fullmatch(r"sample \([0-9a-f]{12}\)", t)]
    assert len(datasets) == len(RUNS), f"Dataset column: {datasets}"
    print(f"\nruns table screenshot: {shot}")


def test_chart_view_draws_throughput_over_gamma(ui):
    base, exp, _, _, tmp = ui
    shot = tmp / "chart_view.png"
    want = [f"{r} (throughput)" for r in RUNS if "sweep" not in r]
    text = render_until(f"{base}/#/experiments/{exp}/runs?compareRunsMode=CHART", tmp,
                        lambda t: all(w in t for w in want), size="1600,4200", screenshot=shot)
    assert "throughput" in text, "no throughput chart in the chart view"
    legend = [t for t in text if t.endswith("(throughput)")]
    assert all(w in legend for w in want), f"throughput chart legend: {legend}"
    after = text[text.index("throughput"):]
    assert "Step" in after[:40], after[:40]                   # a line chart over the step axis (= initial γ)
    assert shot.exists() and shot.stat().st_size > 10_000
    print(f"\nchart view screenshot: {shot}")


def test_policy_run_shows_its_gamma_curve(ui):
    base, exp, _, fixed, tmp = ui
    dom = ""
    for budget in (30000, 60000):
        dom = render(f"{base}/#/experiments/{exp}/runs/{fixed}/artifacts/gamma_curve.png", tmp, budget_ms=budget)
        if 'alt="gamma_curve.png"' in dom:
            break
    img = re.search(r'<img[^>]*alt="gamma_curve.png"[^>]*src="([^"]+)"', dom) or \
        re.search(r'<img[^>]*src="([^"]+)"[^>]*alt="gamma_curve.png"', dom)
    assert img and img.group(1).startswith("blob:"), "the artifact view does not show gamma_curve.png"


def test_an_empty_experiment_lists_none_of_them(ui):
    base, _, empty, _, tmp = ui
    text = render_until(f"{base}/#/experiments/{empty}/runs", tmp, lambda t: "Training runs" in t)
    assert "Training runs" in text, text[:40]                   # the page rendered ...
    assert not [r for r in RUNS if r in text]                   # ... and shows no run of the other experiment
