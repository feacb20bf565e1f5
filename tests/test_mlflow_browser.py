"""The MLflow UI shows a sweep: a real ``mlflow server`` and headless Chromium on a store the tracker wrote.

The store is built by ``SweepTracker`` from scripted rows (no model, no Ray): the live runs of
``fixed`` and ``gammatune`` with ``ar``, and the replayed twin of each policy, summarised the way
a sweep summarises (one mode per config). The server runs on 127.0.0.1 with one worker;
Chromium renders the UI's JavaScript app and dumps the DOM, and the assertions read what a
person would see:

* the experiment opens on its runs table, which lists every (pair, policy, mode) run by name and
  names the dataset;
* the ``throughput`` chart of the policy runs is drawn over step (= initial γ), and its table
  shows each run's values at the sweep's γ exactly as the store holds them;
* a policy run's artifact view shows its ``gamma_curve.png``.

Screenshots are kept in the test's tmp folder (paths printed with ``-s``); with
``SPECSWEEP_UI_SCREENSHOT=PATH`` the chart's screenshot is also copied to PATH (how
docs/mlflow_runs.png is made). Skipped, with one line, only when no Chromium is installed.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import free_ports

pytest.importorskip("mlflow")

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome", "headless_shell")
                 if shutil.which(n)), None)
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install -y chromium)"),
              pytest.mark.slow]      # a headless browser and an MLflow server: ~45 s

RUNS = ["ar · tiny", "fixed · tiny", "gammatune:eta=0.5 · tiny", "fixed · tiny · replay",
        "gammatune:eta=0.5 · tiny · replay", "surface · sweep · out"]
SERVER_START_S = 60


def build_store(tmp: Path) -> tuple[str, dict]:
    """A sweep's tracking store in ``tmp``; returns (experiment id, {policy run name: (run id, {γ: throughput})})."""
    import pyarrow as pa

    from jobs.report import metrics
    from jobs.report.agreement import primary_rows
    from jobs.mlflow.tracking import SweepTracker
    from tests.mlflow_rows import client, history, make_cfg, replayed, scripted_table, tasks_of, with_mode

    cfg = make_cfg(tmp)
    c = client(cfg)
    tracker = SweepTracker(c, cfg, tasks_of(cfg))
    tracker.start()
    tables = []
    for t in tasks_of(cfg):
        live = scripted_table(t)
        tables += [with_mode(live, "live"), replayed(live)]
        tracker.task_done(pa.concat_tables(tables[-2:]))
    ok = primary_rows(pa.concat_tables(tables).to_pandas(), "replay")     # as a replay sweep summarises
    tracker.finish("FINISHED", metrics.config_summary(ok), metrics.speedup_vs_ar(ok))
    exp = c.get_experiment_by_name(cfg.experiment_name).experiment_id
    runs = {r.info.run_name: (r.info.run_id, dict(history(c, r, "throughput")))
            for r in c.search_runs([exp]) if r.data.tags.get("specsweep.role") == "policy"}
    return exp, runs


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """(base URL, experiment id, {policy run name: (run id, {γ: throughput})}, folder) of a running server."""
    tmp = tmp_path_factory.mktemp("ui")
    cwd = os.getcwd()
    os.chdir(tmp)                      # a sqlite store keeps artifacts under ./mlruns
    try:
        exp, runs = build_store(tmp)
    finally:
        os.chdir(cwd)
    (port,) = free_ports(1)
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
        yield base, exp, runs, tmp
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
    """Render ``url`` until ``done(text)`` holds, at most three times (a slow machine may need a longer look)."""
    text: list[str] = []
    for budget in (15000, 30000, 60000):
        text = visible_text(render(url, folder, budget_ms=budget, **kw))
        if done(text):
            break
    return text


def metric_page(base: str, exp: str, run_ids: list[str], key: str) -> str:
    """The UI's page of one metric for ``run_ids``, drawn against step (the chart a run's metric opens on)."""
    q = {"runs": json.dumps(run_ids), "metric": json.dumps(key), "experiments": json.dumps([exp]),
         "plot_metric_keys": json.dumps([key]), "plot_layout": "{}", "x_axis": "step", "y_axis_scale": "linear",
         "line_smoothness": "1", "show_point": "true", "deselected_curves": "[]", "last_linear_y_axis_range": "[]"}
    return f"{base}/#/metric/{key}?" + urllib.parse.urlencode(q, quote_via=urllib.parse.quote, safe="[]{},")


def test_runs_table_lists_every_run_and_the_dataset(ui):
    base, exp, _, tmp = ui
    shot = tmp / "runs_table.png"
    text = render_until(f"{base}/#/experiments/{exp}/runs", tmp, lambda t: "matching runs" in t, screenshot=shot)
    assert "Training runs" in text, text[:40]                   # the experiment opened on its runs, not GenAI
    missing = [r for r in RUNS if r not in text]
    assert not missing, f"runs table lacks {missing}; it shows {text}"
    datasets = [t for t in text if re.fullmatch(r"sample \([0-9a-f]{12}\)", t)]
    assert len(datasets) == len(RUNS), f"Dataset column: {datasets}"
    print(f"\nruns table screenshot: {shot}")


def test_throughput_chart_over_gamma_shows_the_stored_values(ui):
    base, exp, runs, tmp = ui
    shot = tmp / "throughput_over_gamma.png"
    gammas = sorted({g for _, pts in runs.values() for g in pts})
    assert gammas == [2, 4] and all(sorted(pts) == gammas for _, pts in runs.values()), runs
    want = [f"{name} (throughput)" for name in runs]
    text = render_until(metric_page(base, exp, [rid for rid, _ in runs.values()], "throughput"), tmp,
                        lambda t: all(w in t for w in want) and "Latest" in t, size="1600,800", screenshot=shot)
    assert all(w in text for w in want), f"chart legend lacks runs; page shows {text}"
    assert "Step" in text[text.index("throughput"):][:40], text     # drawn over the step axis (= initial γ)
    table = text[text.index("Latest"):]
    for name, (_, pts) in runs.items():         # each run's row: latest (at the last γ), min, max, as stored
        row = table[table.index(name) + 1:][:3]
        lo, hi = min(pts, key=pts.get), max(pts, key=pts.get)
        expect = [f"{pts[gammas[-1]]!r} (step={gammas[-1]})", f"{pts[lo]!r} (step={lo})", f"{pts[hi]!r} (step={hi})"]
        assert [re.sub(r"\s+", " ", x) for x in row] == expect, (name, row, expect)
    assert shot.exists() and shot.stat().st_size > 10_000
    if os.environ.get("SPECSWEEP_UI_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["SPECSWEEP_UI_SCREENSHOT"])
    print(f"\nthroughput chart screenshot: {shot}")


def test_policy_run_shows_its_gamma_curve(ui):
    base, exp, runs, tmp = ui
    fixed = runs["fixed · tiny"][0]
    dom = ""
    for budget in (15000, 30000, 60000):
        dom = render(f"{base}/#/experiments/{exp}/runs/{fixed}/artifacts/gamma_curve.png", tmp, budget_ms=budget)
        if 'alt="gamma_curve.png"' in dom:
            break
    img = re.search(r'<img[^>]*alt="gamma_curve.png"[^>]*src="([^"]+)"', dom) or \
        re.search(r'<img[^>]*src="([^"]+)"[^>]*alt="gamma_curve.png"', dom)
    assert img and img.group(1).startswith("blob:"), "the artifact view does not show gamma_curve.png"
