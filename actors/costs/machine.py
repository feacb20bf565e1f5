"""What a cost model was measured on, and whether another machine is the same for timing purposes.

A step time belongs to the device, the dtype, the thread count and the torch build that produced
it; :func:`machine_facts` records those (plus the host and load average, for the record) and
:func:`machine_differences` names the facts in which two records differ. The host and the load
are not compared: two nodes of one kind time alike, and load is judged when measuring
(``actors/costs/calibrate.py``).
"""
from __future__ import annotations

import os
import platform
import socket

import torch

COMPARED = ("device_name", "dtype", "threads", "torch", "cpu_count")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_facts(device, dtype) -> dict:
    """The facts a step time depends on, and the host and 1-minute load average when measured."""
    device = torch.device(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else _cpu_name()
    return {"device": str(device), "device_name": name, "dtype": str(dtype).replace("torch.", ""),
            "threads": torch.get_num_threads(), "torch": torch.__version__, "cpu_count": os.cpu_count(),
            "host": socket.gethostname(), "load_avg": round(os.getloadavg()[0], 2)}


def machine_differences(stored: dict, here: dict) -> list[str]:
    """``"fact: stored → here"`` for each compared fact that differs (empty: same kind of machine)."""
    return [f"{k}: {stored.get(k)!r} → {here.get(k)!r}" for k in COMPARED if stored.get(k) != here.get(k)]
