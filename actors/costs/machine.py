"""What a cost model was measured on, and whether another machine is the same for timing purposes.

A step time belongs to the device, the dtype, the thread count, the torch build, how many of the pair's linear
layers were packed for the CPU (``actors/runtime/cpu_pack.py``) and the engine setup that produced it: the engine the
target runs on (``eager``, ``static`` or ``compiled``, after any fallback to eager), whether its forward is
compiled by Inductor, and the static KV cache's capacity every static forward attends over (None on eager, whose
cost does not depend on it). :func:`machine_facts` records those (plus the host and load average, for the record)
and :func:`machine_differences` names the facts in which two records differ; a record that lacks a compared fact
(one written before the fact was recorded) differs in it. The host and the load are not compared: two nodes of one
kind time alike, and load is judged when measuring (``actors/costs/calibrate.py``).
"""
from __future__ import annotations

import os
import platform
import socket

import torch

from actors.runtime.cpu_pack import packed_layers

COMPARED = ("device_name", "dtype", "threads", "torch", "cpu_count", "packed_layers", "engine", "inductor", "capacity")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_facts(device, dtype, models=(), engine=None) -> dict:
    """The facts a step time depends on (``models``: the pair's modules whose packed layers count; ``engine``: the
    pair's :class:`~actors.core.engine.SpecEngine`, whose setup :func:`engine_facts` adds), and the host and 1-minute
    load average when measured."""
    device = torch.device(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else _cpu_name()
    return {"device": str(device), "device_name": name, "dtype": str(dtype).replace("torch.", ""),
            "threads": torch.get_num_threads(), "torch": torch.__version__, "cpu_count": os.cpu_count(),
            "packed_layers": packed_layers(*models), **(engine_facts(engine) if engine is not None else {}),
            "host": socket.gethostname(), "load_avg": round(os.getloadavg()[0], 2)}


def engine_facts(engine) -> dict:
    """The engine setup a step time depends on: ``engine`` (the target runner's engine, a fallback to eager
    included), ``inductor`` (its forward compiled by Inductor) and ``capacity`` (the static KV cache's positions;
    None on eager)."""
    runner = engine.runner
    capacity = getattr(runner, "capacity", None) if engine.engine != "eager" else None
    return {"engine": engine.engine, "inductor": bool(getattr(runner, "inductor", False)),
            "capacity": None if capacity is None else int(capacity)}


def engine_models(engine) -> tuple:
    """The modules whose packed layers :func:`machine_facts` counts: the engine's target and its drafter's model."""
    return engine.target, getattr(engine.drafter, "model", None)


def machine_differences(stored: dict, here: dict) -> list[str]:
    """``"fact: stored → here"`` for each compared fact that differs (empty: same kind of machine)."""
    return [f"{k}: {stored.get(k)!r} → {here.get(k)!r}" for k in COMPARED if stored.get(k) != here.get(k)]


def cpu_times() -> tuple[float, float] | None:
    """(busy, total) CPU time of the whole machine so far, in clock ticks summed over its CPUs, from the first line of
    ``/proc/stat`` (Linux; None elsewhere): total = user + nice + system + idle + iowait + irq + softirq + steal,
    busy = total − idle − iowait."""
    try:
        with open("/proc/stat") as f:
            first = f.readline().split()
    except OSError:
        return None
    if len(first) < 5 or first[0] != "cpu":
        return None
    ticks = [float(x) for x in first[1:9]]
    total = sum(ticks)
    return total - ticks[3] - ticks[4], total


def busy_cpus(start: tuple[float, float] | None, end: tuple[float, float] | None, cpus: int) -> float | None:
    """How many of the machine's ``cpus`` CPUs were busy on average between two :func:`cpu_times` readings (None
    when either is missing or no time passed): the share of busy ticks times ``cpus``. Unlike the 1-minute load
    average it holds only what ran inside the window, not the minute before it."""
    if start is None or end is None or end[1] <= start[1]:
        return None
    return (end[0] - start[0]) / (end[1] - start[1]) * cpus
