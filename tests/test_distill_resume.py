"""``specsweep distill`` resumes from its run folder: every resume file (answer and feature shards, checkpoint, curve,
settings, vocabulary maps) is written to a twin and renamed into place once on the disk, so an interrupted save never
leaves a torn file under its final name, and a file that cannot be read is refused in one line naming it."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
import torch

from actors.loading.tiny_pair import llama, save_tiny_pair, sharpen
from jobs.distill.draft import DistillConfig, run_distill
from jobs.store import durable
from policies.errors import SpecsweepError

SMALL = dict(layers=1, vocab=40, prompts=2, gen_batch=2, max_new_tokens=4, topk=4, steps=2, batch_size=1,
             save_every=1, device="cpu")


class Interrupted(BaseException):
    """A Ctrl-C stand-in: not an ``Exception``, so nothing on the way catches it."""


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> str:
    return save_tiny_pair(tmp_path_factory.mktemp("pair"))[0]


def _tear_first_write(monkeypatch, prefix: str) -> None:
    """The first ``torch.save`` or ``Path.write_text`` to a file named ``prefix…`` writes half, then is stopped."""
    real_save, real_write = torch.save, Path.write_text
    done = []

    def torn(path, data: bytes):
        done.append(path)
        Path(path).write_bytes(data[: len(data) // 2])
        raise Interrupted(path)

    def save(obj, f, *a, **k):
        if not done and isinstance(f, (str, os.PathLike)) and Path(f).name.startswith(prefix):
            real_save(obj, str(f) + ".whole", *a, **k)
            data = Path(str(f) + ".whole").read_bytes()
            os.remove(str(f) + ".whole")
            torn(f, data)
        return real_save(obj, f, *a, **k)

    def write_text(self, text, *a, **k):
        if not done and self.name.startswith(prefix):
            torn(self, text.encode())
        return real_write(self, text, *a, **k)

    monkeypatch.setattr(torch, "save", save)
    monkeypatch.setattr(Path, "write_text", write_text)


# ---------------------------------------------------------------- draft distillation
@pytest.mark.parametrize("prefix", ["answers-", "distill_config", "vocab_map", "checkpoint"])
def test_a_save_interrupted_midway_leaves_a_folder_the_same_command_resumes(tmp_path, target, monkeypatch, prefix):
    cfg = DistillConfig(target=target, out=str(tmp_path / "d"), **SMALL)
    with monkeypatch.context() as m:
        _tear_first_write(m, prefix)
        with pytest.raises(Interrupted):
            run_distill(cfg)
    out = run_distill(cfg)                       # no traceback from a torn file: the run resumes and finishes
    assert (out / "model.safetensors").exists()
    assert torch.load(tmp_path / "d" / "checkpoint.pt")["step"] == SMALL["steps"]


def test_every_resume_file_is_synced_before_its_rename(tmp_path, target, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(durable.os, "fsync", lambda fd: events.append(os.readlink(f"/proc/self/fd/{fd}"))
                        or real_fsync(fd))
    monkeypatch.setattr(durable.os, "replace", lambda src, dst: events.append((str(src), str(dst)))
                        or real_replace(src, dst))
    run_distill(DistillConfig(target=target, out=str(tmp_path / "d"), **SMALL))
    resume = {"distill_config.json", "answers-00000.pt", "vocab_map.json", "checkpoint.pt"}
    renamed = [(i, e) for i, e in enumerate(events) if isinstance(e, tuple) and Path(e[1]).name in resume]
    assert {Path(e[1]).name for _, e in renamed} == resume, events
    for i, (tmp, path) in renamed:               # the twin's bytes reach the disk first, the folder's entry after
        assert events[i - 1] == tmp == path + ".tmp" and events[i + 1] == os.path.dirname(path), events[i - 1:i + 2]


@pytest.mark.parametrize("name", ["answers-00000.pt", "checkpoint.pt", "distill_config.json", "vocab_map.json"])
def test_a_torn_resume_file_is_refused_in_one_line_naming_it(tmp_path, target, name, capsys):
    from jobs.cli import main

    out = tmp_path / "d"
    argv = ["distill", "--target", target, "--out", str(out), "--prompts", "2", "--max-new-tokens", "4", "--steps",
            "2", "--layers", "1", "--vocab", "40", "--gen-batch", "2", "--batch-size", "1", "--device", "cpu"]
    assert main(argv) == 0
    torn = out / name
    torn.write_bytes(torn.read_bytes()[: torn.stat().st_size // 2])
    capsys.readouterr()
    assert main(argv) == 2                       # not a traceback
    last = capsys.readouterr().err.strip().splitlines()[-1]     # (progress bars may come before it on stderr)
    assert last.startswith(f"specsweep: error: distill cannot read {torn} (") and f": delete {torn} and run" in last
    torn.unlink()
    assert main(argv) == 0                       # deleted: that part is redone


# ---------------------------------------------------------------- EAGLE head features and curve
def _head_run(tmp_path):
    target = sharpen(llama(vocab=70, seed=5))
    rng = random.Random(0)
    samples = [{"prompt_ids": [rng.randrange(70) for _ in range(4)],
                "answer_ids": [rng.randrange(70) for _ in range(6)]} for _ in range(6)]
    return target, samples, tmp_path / "h"


def test_a_torn_feature_shard_is_refused_and_an_interrupted_one_is_redone(tmp_path, monkeypatch):
    from jobs.distill.head_training import build_features

    target, samples, out = _head_run(tmp_path)
    out.mkdir()
    with monkeypatch.context() as m:
        _tear_first_write(m, "features-")
        with pytest.raises(Interrupted):
            build_features(target, samples, out)
    assert len(build_features(target, samples, out)) == len(samples)
    shard = out / "features-00000.pt"
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(SpecsweepError, match=f"^distill cannot read {shard} .*: delete {shard}"):
        build_features(target, samples, out)


def test_an_interrupted_curve_save_leaves_head_training_resumable(tmp_path, monkeypatch):
    from actors.drafting.eagle_head import init_head
    from jobs.distill.eagle import EagleDistillConfig, train_head
    from jobs.distill.head_training import build_features

    target, samples, out = _head_run(tmp_path)
    out.mkdir()
    feats = build_features(target, samples, out)
    cfg = EagleDistillConfig(out=str(out), steps=2, batch_size=2, warmup=1, save_every=1, unroll=1)
    with monkeypatch.context() as m:
        _tear_first_write(m, "curve")
        with pytest.raises(Interrupted):
            train_head(cfg, target, init_head(target, seed=0), samples, feats, list(range(70)), None, out)
    train_head(cfg, target, init_head(target, seed=0), samples, feats, list(range(70)), None, out)
    assert torch.load(out / "checkpoint.pt", weights_only=True)["step"] == 2
