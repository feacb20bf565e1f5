"""Wait for a joined cluster to grow the GPU nodes a sweep needs.

A cluster launched from ``ray_cluster.yaml`` starts with no GPU workers (``min_workers: 0``): its autoscaler adds
them on demand. With ``--wait-for-gpus SECONDS`` the sweep asks the autoscaler for one bundle per GPU actor
(``ray.autoscaler.sdk.request_resources``, each bundle the actor's GPUs on one node) and waits until the alive nodes
can place every actor (:func:`cluster.ray_setup.check_placeable`) or the time is up, saying every
:data:`LINE_S` seconds what it has. The request is withdrawn once the wait ends, so the autoscaler can later
remove the nodes as usual when the sweep's actors have gone.
"""
from __future__ import annotations

import time
from typing import Callable

from cluster.ray_setup import check_placeable
from policies.errors import SpecsweepError

POLL_S = 2.0     # how often the alive nodes are read again
LINE_S = 30.0    # how often a waiting line is printed


def node_gpus() -> list[float]:
    """GPUs of each alive node of the connected cluster."""
    import ray  # heavy: ray

    return [n.get("Resources", {}).get("GPU", 0.0) for n in ray.nodes() if n.get("Alive")]


def placeable(gpu_needs: list[tuple[str, float]], gpus: list[float]) -> bool:
    """Whether every (pair, GPUs) actor fits the nodes' ``gpus``, each actor's GPUs on one node."""
    try:
        check_placeable(gpu_needs, gpus)
    except SpecsweepError:
        return False
    return True


def wait_for_gpus(gpu_needs: list[tuple[str, float]], wait_s: float, say: Callable[[str], None],
                  *, read_nodes: Callable[[], list[float]] = node_gpus) -> None:
    """Return once the cluster can place ``gpu_needs`` ((pair, GPUs) per actor), asking its autoscaler for them;
    after ``wait_s`` seconds without them, one line saying what came (the caller's checks then name what is
    missing). Returns at once when they fit already or no actor needs a GPU."""
    if not gpu_needs or placeable(gpu_needs, read_nodes()):
        return
    from ray.autoscaler.sdk import request_resources  # heavy: ray

    total = sum(g for _, g in gpu_needs)
    request_resources(bundles=[{"GPU": g} for _, g in gpu_needs])
    say(f"waiting up to {wait_s:g} s for the cluster's autoscaler to add {total:g} GPU(s) "
        f"({len(gpu_needs)} actor(s), each actor's GPUs on one node)")
    start = last = time.monotonic()
    try:
        while True:
            gpus = read_nodes()
            if placeable(gpu_needs, gpus):
                say(f"the cluster has the GPUs after {time.monotonic() - start:.0f} s ({sum(gpus):g} on "
                    f"{sum(1 for g in gpus if g)} node(s))")
                return
            now = time.monotonic()
            if now - start >= wait_s:
                say(f"the autoscaler gave {sum(gpus):g} of the {total:g} GPU(s) within {wait_s:g} s")
                return
            if now - last >= LINE_S:
                say(f"still waiting for GPUs after {now - start:.0f} s: the cluster has {sum(gpus):g} of {total:g}")
                last = now
            time.sleep(min(POLL_S, max(0.0, wait_s - (now - start))))
    finally:
        request_resources(bundles=[])
