"""A model's CUDA graphs are captured and replayed with its own device current, on a stream of that device, and the
host-to-device staging event waits on that device's stream (``actors/runtime/runners.py::device_context``); on the
CPU the context is a null one. The drafter runs on the engine the target resolved to, not the one asked for.

No GPU here: ``torch.cuda``'s streams, graphs, events and device switches are replaced by recorders, and a runner
built on the CPU is told it sits on ``cuda:1``."""
import contextlib

import pytest
import torch

from actors.core.engine import SpecEngine
from actors.drafting.drafters import ModelDrafter
from actors.loading.tiny_pair import llama, perturbed, sharpen
from actors.runtime.runners import EagerRunner, Staging, StaticRunner, device_context
from actors.runtime.static_batch_runner import StaticBatchRunner
from policies.fixed import Fixed, TargetOnly
from tests.helpers import NoStaticLM

VOCAB = 32
CUDA1 = torch.device("cuda", 1)


class FakeCuda:
    """What the runners did with ``torch.cuda``: the current device index at each capture (with the capture stream's
    device index, None for torch's default capture stream), at each replay, and each event's stream device."""

    def __init__(self):
        self.current = 0
        self.captures: list[tuple[int, int | None]] = []
        self.replays: list[int] = []
        self.events: list[torch.device | None] = []


@pytest.fixture
def fake_cuda(monkeypatch):
    fake = FakeCuda()

    class Stream:
        def __init__(self, device=None):
            self.device = torch.device("cuda", fake.current) if device is None else torch.device(device)

        def wait_stream(self, other):
            pass

    class Device:
        def __init__(self, device):
            self.idx = torch.device(device).index

        def __enter__(self):
            self.prev, fake.current = fake.current, self.idx

        def __exit__(self, *exc):
            fake.current = self.prev
            return False

    class CUDAGraph:
        def replay(self):
            fake.replays.append(fake.current)

    class Graph:
        def __init__(self, graph, pool=None, stream=None, **kw):
            self.stream = stream

        def __enter__(self):
            fake.captures.append((fake.current, None if self.stream is None else self.stream.device.index))

        def __exit__(self, *exc):
            return False

    class Event:
        def record(self, stream=None):
            fake.events.append(None if stream is None else stream.device)

        def synchronize(self):
            pass

    for name, value in {"Stream": Stream, "current_stream": Stream, "stream": lambda s: contextlib.nullcontext(),
                        "device": Device, "CUDAGraph": CUDAGraph, "graph": Graph, "Event": Event}.items():
        monkeypatch.setattr(torch.cuda, name, value)
    return fake


def _on_cuda1(runner):
    """Tell a CPU-built runner it sits on cuda:1 with graphs; its forwards return zero logits (no model runs)."""
    runner.device, runner._use_graphs = CUDA1, True
    runner._call = lambda *shape, fn=None: (torch.zeros(*([1] if len(shape) == 1 else []), *shape, VOCAB), None)
    return runner


def test_the_device_context_is_a_null_context_on_the_cpu():
    assert isinstance(device_context(torch.device("cpu")), contextlib.nullcontext)
    assert isinstance(device_context("cpu"), contextlib.nullcontext)
    with device_context("cpu"):
        pass


def test_the_device_context_selects_the_cuda_device(fake_cuda):
    with device_context(CUDA1):
        assert fake_cuda.current == 1
    assert fake_cuda.current == 0


class _Dst:
    """A device tensor on cuda:1, as far as ``Staging.upload`` looks at it."""

    is_cuda, device = True, CUDA1

    def __getitem__(self, key):
        return self

    def copy_(self, src, non_blocking=False):
        self.copied = src.clone()
        return self


def test_the_upload_event_waits_on_the_destination_devices_stream(fake_cuda):
    staging, dst = Staging(torch.arange(4)), _Dst()
    staging.upload(dst, 3)
    assert dst.copied.tolist() == [0, 1, 2]
    assert fake_cuda.events == [CUDA1]


def test_a_one_row_runner_on_a_second_gpu_captures_and_replays_there(fake_cuda):
    runner = _on_cuda1(StaticRunner(llama(vocab=VOCAB, seed=3), 64, compiled=True, inductor=False))
    runner.prepare(4)
    assert fake_cuda.captures == [(1, 1)] * 3            # buckets 1, 2, 4: device 1 current, a stream of device 1
    runner.reset()
    assert runner.forward([1, 2, 3]).shape == (3, VOCAB)  # the bucket-4 graph
    assert fake_cuda.replays == [1] and fake_cuda.current == 0


def test_a_batch_runner_on_a_second_gpu_captures_and_replays_there(fake_cuda):
    runner = StaticBatchRunner(llama(vocab=VOCAB, seed=3), 64, compiled=True, inductor=False)
    runner._allocate(2)                                   # its buffers on the CPU, before it is told it is on cuda:1
    _on_cuda1(runner).prepare(4)
    runner.reset(2)
    assert fake_cuda.captures == [(1, 1)] * 6            # rows {1, 2} × inputs {1, 2, 4}
    out = runner.forward([[1, 2], [3]])
    assert [o.shape for o in out] == [(2, VOCAB), (1, VOCAB)]
    assert fake_cuda.replays == [1] and fake_cuda.current == 0


def test_the_drafter_runs_on_the_engine_the_target_resolved_to(capsys):
    target = sharpen(llama(vocab=64, seed=64))
    engine = SpecEngine(NoStaticLM(target), ModelDrafter(perturbed(target, 0.25, seed=65)), engine="static",
                        capacity=128)
    assert "cannot use engine static" in capsys.readouterr().err
    assert engine.engine == "eager"
    assert engine.drafter.engine == "eager" and isinstance(engine.drafter.runner, EagerRunner)
    prompt = [1, 2, 3, 1, 2]
    ar = SpecEngine(target).generate(prompt, TargetOnly(), max_new_tokens=20).token_ids
    assert engine.generate(prompt, Fixed(3), max_new_tokens=20).token_ids == ar
