"""Shared caches are written once and safely (actors/loading/shared_cache.py): several processes racing on an
empty cache build an entry once, the others wait and say so, and a builder killed halfway leaves
nothing a later run mistakes for complete."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A builder that takes a while, logs that it ran, and writes a two-file folder.
RACER = r"""
import os, sys, time
from pathlib import Path
from actors.loading.shared_cache import build_once
final, log, pause = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
def build(tmp):
    with open(log, "a") as f:
        f.write(f"{os.getpid()}\n")
    tmp.mkdir()
    (tmp / "a.txt").write_text("first half")
    Path(str(log) + ".started").write_text("x")
    time.sleep(pause)
    (tmp / "b.txt").write_text("second half")
out = build_once(final, build, "the test entry", ready=lambda p: (p / "b.txt").exists())
print("READY", (out / "a.txt").read_text(), (out / "b.txt").read_text())
"""


def _env(cache: Path) -> dict:
    return {**os.environ, "SPECSWEEP_CACHE": str(cache), "PYTHONPATH": str(ROOT)}


def _racer(final: Path, log: Path, pause: float, cache: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", RACER, str(final), str(log), str(pause)], env=_env(cache),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def test_racing_processes_build_once_and_the_others_wait(tmp_path):
    final, log = tmp_path / "store" / "entry", tmp_path / "builders.log"
    procs = [_racer(final, log, 1.5, tmp_path / "cache") for _ in range(4)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert all(o.strip() == "READY first half second half" for o, _ in outs), outs
    assert len(log.read_text().split()) == 1                       # built exactly once
    waits = [e for _, e in outs if "waiting for another process to finish writing the test entry" in e]
    assert waits, outs                                            # the others said why they paused ...
    assert all(len([ln for ln in e.splitlines() if ln.strip()]) <= 1 for _, e in outs)   # ... in one line
    assert sorted(p.name for p in final.parent.iterdir()) == ["entry"]   # no temporaries left
    assert not list((tmp_path / "store").iterdir())[0].is_symlink()


def test_a_writer_killed_halfway_leaves_nothing_taken_for_complete(tmp_path):
    final, log, cache = tmp_path / "store" / "entry", tmp_path / "builders.log", tmp_path / "cache"
    victim = _racer(final, log, 60, cache)
    deadline = time.time() + 30
    while not Path(str(log) + ".started").exists():
        assert time.time() < deadline and victim.poll() is None, victim.communicate()
        time.sleep(0.05)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    assert not final.exists()                                     # half an entry never sits under the final name
    assert [p.name.startswith(".entry.part-") for p in final.parent.iterdir()] == [True]
    again = _racer(final, log, 0, cache)                          # the lock died with its holder
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0 and out.strip() == "READY first half second half", err
    assert len(log.read_text().split()) == 2
    assert sorted(p.name for p in final.parent.iterdir()) == ["entry"]   # the leftover was cleared


def test_an_incomplete_entry_under_the_final_name_is_rebuilt(tmp_path, monkeypatch):
    from actors.loading.shared_cache import build_once

    monkeypatch.setenv("SPECSWEEP_CACHE", str(tmp_path / "cache"))
    final = tmp_path / "entry"
    final.mkdir()
    (final / "config.json").write_text("{}")                     # an older layout's half-written folder

    def build(tmp):
        tmp.mkdir()
        (tmp / "config.json").write_text("{}")
        (tmp / "model.safetensors").write_text("w")

    def complete(p):
        return (p / "model.safetensors").exists()

    assert build_once(final, build, "x", ready=complete) == final and complete(final)


def test_locks_stay_out_of_user_folders(tmp_path, monkeypatch):
    from actors.loading.shared_cache import lock_path

    monkeypatch.setenv("SPECSWEEP_CACHE", str(tmp_path / "cache"))
    p = lock_path("mlflow-/home/u/x\n\x00y" + "z" * 500)
    assert p.parent == tmp_path / "cache" / "locks" and len(p.name) < 120 and "\x00" not in p.name


@pytest.mark.slow
def test_two_actors_dequantize_smollm2_on_an_empty_cache(tmp_path):
    """The first-run failure: both pairs of the default sweep load SmolLM2 at once on an empty HOME."""
    code = ("from actors.loading.models import resolve_source; from transformers import AutoConfig; "
            "p = resolve_source('smollm2-135m'); print('OK', AutoConfig.from_pretrained(p).num_hidden_layers)")
    env = {**_env(tmp_path / "cache"), "HOME": str(tmp_path / "home")}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert all(o.strip() == "OK 30" for o, _ in outs), outs
    assert sum("dequantizing SmolLM2-135M once" in e for _, e in outs) == 1, outs
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["locks", "smollm2-135m"]
