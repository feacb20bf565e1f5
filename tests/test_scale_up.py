"""``--wait-for-gpus``: a joined cluster that starts without GPU workers (ray_cluster.yaml) is asked for the GPU
actors' nodes and waited for, with progress lines, for at most the given time; the request is withdrawn after."""
from __future__ import annotations

import os

import pytest

from cluster import scale_up


def _requests(monkeypatch) -> list:
    import ray.autoscaler.sdk

    asked = []
    monkeypatch.setattr(ray.autoscaler.sdk, "request_resources", lambda bundles=None, **kw: asked.append(bundles))
    return asked


def test_nodes_that_come_are_waited_for_and_the_request_withdrawn(monkeypatch):
    asked = _requests(monkeypatch)
    monkeypatch.setattr(scale_up, "POLL_S", 0.01)
    monkeypatch.setattr(scale_up, "LINE_S", 0.0)
    seen = iter([[0.0], [0.0, 1.0], [0.0, 1.0, 2.0]])          # the head, then one worker, then a 2-GPU worker
    lines = []
    scale_up.wait_for_gpus([("a", 1.0), ("b", 2.0)], 60, lines.append, read_nodes=lambda: next(seen))
    assert asked == [[{"GPU": 1.0}, {"GPU": 2.0}], []]
    assert lines[0].startswith("waiting up to 60 s for the cluster's autoscaler to add 3 GPU(s) (2 actor(s)")
    assert "still waiting for GPUs after" in lines[1] and "the cluster has 1 of 3" in lines[1]
    assert lines[-1].startswith("the cluster has the GPUs after") and "(3 on 2 node(s))" in lines[-1]


def test_a_wait_that_runs_out_says_what_came_and_nothing_is_asked_when_they_fit(monkeypatch):
    asked = _requests(monkeypatch)
    monkeypatch.setattr(scale_up, "POLL_S", 0.01)
    lines = []
    scale_up.wait_for_gpus([("a", 2.0)], 0.05, lines.append, read_nodes=lambda: [1.0, 1.0])   # 2 GPUs, not on one node
    assert asked == [[{"GPU": 2.0}], []]
    assert lines[-1] == "the autoscaler gave 2 of the 2 GPU(s) within 0.05 s"
    scale_up.wait_for_gpus([("a", 1.0)], 60, lines.append, read_nodes=lambda: [4.0])
    scale_up.wait_for_gpus([], 60, lines.append, read_nodes=lambda: [])
    assert asked == [[{"GPU": 2.0}], []] and len(lines) == 2


def test_the_wait_flag_takes_seconds_from_0_to_a_day_on_both_commands(capsys):
    from jobs.cli import main as cli_main
    from jobs.sweep.command import main as sweep_main

    for bad in ("-5", "nan", "1e9", "soon"):
        assert sweep_main(["x.yaml", "--wait-for-gpus", bad]) == 2
        assert cli_main(["sweep", "x.yaml", "--wait-for-gpus", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 2 and all("is not a number of seconds from 0 to 86400" in e for e in err), err


@pytest.mark.slow
def test_a_gpu_node_joining_a_real_cluster_ends_the_wait():
    saved = dict(os.environ)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray
    from ray.cluster_utils import Cluster

    from cluster.ray_setup import connect

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0, "object_store_memory": 80 * 2**20,
                                                      "node_ip_address": "127.0.0.1"})
    try:
        connect(c.address)                      # a loopback cluster, joined as the sweep joins it
        reads = []

        def nodes_as_a_worker_joins() -> list[float]:
            """The cluster's alive nodes; a 2-GPU worker joins after the wait's first look (no autoscaler here)."""
            reads.append(scale_up.node_gpus())
            if len(reads) == 2:
                c.add_node(num_cpus=1, num_gpus=2, object_store_memory=80 * 2**20, node_ip_address="127.0.0.1")
            return reads[-1]

        lines = []
        scale_up.wait_for_gpus([("pair", 2.0)], 300, lines.append, read_nodes=nodes_as_a_worker_joins)
        assert reads[0] == [0.0] and lines[-1].startswith("the cluster has the GPUs after"), (reads, lines)
        assert sorted(scale_up.node_gpus()) == [0.0, 2.0]
    finally:
        ray.shutdown()
        c.shutdown()
        os.environ.clear()
        os.environ.update(saved)


def test_a_cluster_that_cannot_be_joined_names_where_its_address_came_from(monkeypatch):
    from cluster import ray_setup
    from policies.errors import SpecsweepError

    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")          # nothing listens on the discard port
    with pytest.raises(SpecsweepError, match="the address comes from RAY_ADDRESS: unset it"):
        ray_setup.check_address(None)
    monkeypatch.delenv("RAY_ADDRESS")
    with pytest.raises(SpecsweepError, match="omit --address for a local cluster$"):
        ray_setup.check_address("127.0.0.1:9")


def test_joining_another_machines_cluster_leaves_rays_token_auth_on(monkeypatch):
    """The loopback cluster specsweep starts runs without token auth; a cluster on another host keeps Ray's default
    (token auth), and a refusal says what token auth needs."""
    from cluster import ray_setup
    from policies.errors import SpecsweepError

    def unreachable(address, *a, **kw):
        raise SpecsweepError(f"cannot reach {address}; {ray_setup._remedy(address)}")

    monkeypatch.setattr(ray_setup, "_check_reachable", unreachable)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(SpecsweepError, match=r"auth_token here and RAY_AUTH_MODE=token\)$"):
        ray_setup.connect("10.1.2.3:6379")
    assert "RAY_AUTH_MODE" not in os.environ
    with pytest.raises(SpecsweepError):
        ray_setup.connect("127.0.0.1:6379")
    assert os.environ["RAY_AUTH_MODE"] == "disabled"
