"""Connecting to Ray, or starting a local cluster sized to this machine.

Rules for the local cluster this module starts:

* every service it opens (GCS, raylet, object manager, agents, workers, driver,
  dashboard) listens on 127.0.0.1 only: the node IP is the loopback address and
  Ray is told this is a single-machine cluster, so nothing is reachable from
  another host. That is why token auth can stay off for it
  (``RAY_AUTH_MODE=disabled`` unless the caller set it): Ray 2.60 turns token
  auth on by default and ``ray job submit`` would otherwise get HTTP 401.
* A cluster reached at a loopback address (``127.0.0.1:PORT``) is joined as a
  single-machine cluster too (Ray locates this host's raylet itself).
* Ray does not print remote tracebacks of tasks it is about to retry: the sweep
  reports each final failure itself, as one line.
* The object store is kept small and the driver's helper work takes
  ``num_cpus=0`` so actors holding CPUs never starve it.

A real multi-machine cluster is started by its operator (``ray_cluster.yaml``),
with token auth on; specsweep only joins it.
"""
from __future__ import annotations

import contextlib
import os
import socket
from urllib.parse import urlparse

from policies.errors import SpecsweepError

LOOPBACK = "127.0.0.1"
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@contextlib.contextmanager
def _loopback_only():
    """While Ray starts or joins: use 127.0.0.1 as this node's address, in this process and every
    process Ray spawns meanwhile (they keep it); restored afterwards, so nothing else changes.

    Ray picks the machine's network address as the node IP unless it is told this is a
    single-machine cluster; with the loopback node IP its gRPC servers bind to 127.0.0.1.
    """
    from ray._private import ray_constants  # heavy: ray

    var = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
    saved_env, saved_const = os.environ.get(var), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[var] = "0"                          # inherited by the processes Ray spawns
    ray_constants.ENABLE_RAY_CLUSTER = False       # this process (Ray was imported already)
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_const
        if saved_env is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = saved_env


def _host_of(address: str) -> str:
    hostport = urlparse(address).netloc if "://" in address else address
    return hostport.rpartition(":")[0].strip("[]")


def connect(address: str | None = None, *, num_cpus: int | None = None, object_store_mb: int = 256,
            dashboard: bool = False, quiet: bool = True) -> dict:
    """``ray.init`` on ``address`` (None / "local" starts a local cluster); returns cluster resources."""
    joins = target_address(address)
    if joins is None or joins == "auto" or _host_of(joins) in _LOOPBACK_HOSTS:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")    # this machine only (module docstring)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # a task that will be retried prints its whole remote traceback on the driver's console; the
    # sweep reports the final outcome itself (one line, traceback in the output's errors.log)
    os.environ.setdefault("RAY_enable_output_error_log_if_still_retry", "0")
    import ray  # heavy: ray

    if ray.is_initialized():
        return ray.cluster_resources()
    kw = dict(log_to_driver=not quiet, configure_logging=True, logging_level="ERROR")
    if address in (None, "local"):
        env_addr = os.environ.get("RAY_ADDRESS")
        if env_addr and address is None:   # inside `ray job submit`: join that cluster
            address = env_addr
    if address not in (None, "local", "auto"):
        _check_reachable(address)
    try:
        if address in (None, "local"):
            with _loopback_only():     # "local": a new cluster even when another one runs on this machine
                ray.init(address="local", num_cpus=num_cpus or os.cpu_count(),
                         object_store_memory=object_store_mb * 2**20, include_dashboard=dashboard,
                         dashboard_host=LOOPBACK, _node_ip_address=LOOPBACK, **kw)
        elif address != "auto" and _host_of(address) in _LOOPBACK_HOSTS:
            with _loopback_only():     # Ray finds this host's raylet itself; only the fallback address changes
                ray.init(address=address, **kw)
        else:
            ray.init(address=address, **kw)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise SpecsweepError(f"cannot reach the Ray cluster at {address!r} ({first}); {_remedy(address)}") from None
    return ray.cluster_resources()


def _remedy(address: str | None) -> str:
    """What to do about a cluster that cannot be joined, by where its address came from."""
    if address is None and os.environ.get("RAY_ADDRESS"):
        return ("the address comes from RAY_ADDRESS: unset it for a new local cluster on this machine, or start "
                "the cluster it names")
    auth = (" (a cluster with token auth also needs its ~/.ray/auth_token here and RAY_AUTH_MODE=token)"
            if address not in (None, "local", "auto") and _host_of(address) not in _LOOPBACK_HOSTS else "")
    return f"start one with `ray start --head` or omit --address for a local cluster{auth}"


def target_address(address: str | None) -> str | None:
    """The cluster address ``connect(address)`` will join (None = a new local cluster)."""
    if address in (None, "local"):
        env_addr = os.environ.get("RAY_ADDRESS")
        return env_addr if env_addr and address is None else None
    return address


def check_address(address: str | None) -> None:
    """Refuse, before anything starts, a cluster address nothing listens at (no-op for a local cluster)."""
    addr = target_address(address)
    if addr not in (None, "auto"):
        _check_reachable(addr, remedy=_remedy(address))


def _check_reachable(address: str, timeout: float = 5.0, remedy: str | None = None) -> None:
    """Fail fast on an address nothing listens at (``ray.init`` would retry for minutes)."""

    hostport = urlparse(address).netloc if "://" in address else address
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise SpecsweepError(f"Ray address {address!r} is not HOST:PORT (or ray://HOST:PORT)")
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout)
    except OSError as e:
        raise SpecsweepError(f"cannot reach the Ray cluster at {address!r} ({e.strerror or e}); "
                             f"{remedy or _remedy(address)}") from None
    with sock:
        if os.environ.get("RAY_USE_TLS", "0") not in ("1", "true") and not _speaks_grpc(sock, timeout):
            raise SpecsweepError(f"{address!r} accepts connections but is not a Ray cluster (no gRPC answer within "
                                 f"{timeout:g} s); give the address `ray start --head` printed (the GCS port, "
                                 f"default 6379), or {remedy or _remedy(address)}")


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])   # + an empty SETTINGS


def _speaks_grpc(sock: socket.socket, timeout: float) -> bool:
    """Rule: a Ray GCS (and a Ray Client server) is a gRPC server, and every gRPC server answers the HTTP/2
    connection preface with a SETTINGS frame (RFC 9113 §3.4: frame type 0x4 in the first frame header). Anything
    else — silence for ``timeout`` seconds, an HTTP/1 reply, a closed connection — is not a Ray cluster, refused
    here instead of ``ray.init`` retrying for minutes."""
    sock.settimeout(timeout)
    try:
        sock.sendall(HTTP2_PREFACE)
        head = b""
        while len(head) < 9:
            chunk = sock.recv(9 - len(head))
            if not chunk:
                return False
            head += chunk
    except OSError:
        return False
    return head[3] == 0x4


def check_resources(needs_gpus: float, needs_cpus: float, resources: dict) -> None:
    have_g, have_c = resources.get("GPU", 0.0), resources.get("CPU", 0.0)
    if needs_gpus > have_g:
        raise SpecsweepError(f"the sweep needs {needs_gpus:g} GPUs (pairs × actors × num_gpus) but the cluster has {have_g:g}")
    if needs_cpus > have_c:
        raise SpecsweepError(f"the sweep's CPU actors need {needs_cpus:g} CPUs but the cluster has {have_c:g}; "
                             "lower actors or num_cpus per pair")


def check_placeable(gpu_needs: list[tuple[str, float]], node_gpus: list[float]) -> None:
    """Refuse a sweep whose GPU actors cannot all be placed, each actor's GPUs on one node.

    ``gpu_needs``: (pair label, GPUs) per actor; ``node_gpus``: GPUs of each alive node. First-fit
    decreasing: a pair with ``num_gpus: 2`` on two nodes of one GPU each would wait forever in Ray.
    """
    free = sorted(node_gpus, reverse=True)
    for label, need in sorted(gpu_needs, key=lambda x: -x[1]):
        for i, have in enumerate(free):
            if have >= need:
                free[i] -= need
                break
        else:
            nodes = ", ".join(f"{g:g}" for g in sorted(node_gpus, reverse=True)) or "none"
            raise SpecsweepError(f"pair {label}: an actor needs {need:g} GPUs on one node, and the cluster's nodes "
                                 f"(GPUs per node: {nodes}) cannot place it beside the other actors; lower num_gpus or "
                                 "actors, or add a node with more GPUs")


def shutdown() -> None:
    import ray  # heavy: ray

    if ray.is_initialized():
        ray.shutdown()
