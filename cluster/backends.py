"""Where PairActors live and how sweep tasks reach them: Ray actors, or this process.

Both backends take the same :class:`ActorSpec` s and task dicts and give every task's
outcome — the actor's result or the exception that ended it — to one callback, in
completion order. The driver (``jobs/sweep/driver.py``) owns what happens with a result;
the backend owns only placement and the in-flight loop.

* :class:`RayBackend`: one Ray actor per pair copy, pinned to its GPUs (or CPU
  threads); a GPU actor's GPUs are reserved as one STRICT_PACK placement-group bundle,
  so they always sit on one node, and the actor records the GPU ids Ray gave it (it
  never assumes GPU 0). At most :data:`IN_FLIGHT` tasks are queued per actor, so a slow
  actor never hoards work and a finished task is handed on at once (``ray.wait``).
  Actors restart at most twice (on another node when theirs is lost) and retry a task
  at most twice, so a task lost with its node runs again and is reported once; a
  restart is announced on stderr. What still fails is handed to the callback as an
  exception.
* :class:`InProcessBackend`: the same ``PairActor`` class built in this process, tasks
  run one after another. No Ray, no serialisation: fast tests and debugging.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from cluster.ray_setup import check_placeable
from policies.errors import SpecsweepError

IN_FLIGHT = 2          # tasks queued per Ray actor: one running, one ready to start
PLACE_TIMEOUT_S = 120  # how long a GPU actor's placement group may wait for its GPUs
STARTING_LINE_S = 30   # while Ray actors start (models, warm-up, cost model), a progress line this often
RESUBMITS = 3          # a task whose actor vanished mid-task is sent again this often (after 2, 4, 8 s)


@dataclass
class ActorSpec:
    """One pair's actors: ``copies`` PairActors built with ``kwargs``."""

    label: str                  # pair label
    kwargs: dict                # PairActor(**kwargs), threads excepted (the backend sets them)
    copies: int = 1
    num_gpus: float = 0
    num_cpus: float = 1
    name: str = ""              # Ray actor name prefix ("" = unnamed)


class ActorStartError(Exception):
    """The actors of one pair could not start (model, tokenizer, device, calibration)."""

    def __init__(self, label: str, cause: BaseException):
        super().__init__(f"pair {label}: {cause}")
        self.label, self.cause = label, cause


OnResult = Callable[[dict, object, BaseException | None], None]   # (task, result or None, error or None)


def cpu_shares(specs: list[ActorSpec], cpus: float) -> dict[str, tuple[int | None, float]]:
    """{pair label: (torch threads, CPUs the sweep's other actors hold)}: CPU actors share the machine's cores evenly
    (⌊cpus / CPU actors⌋ threads each, at least 1); a GPU actor keeps torch's default threads (None) and holds one
    host CPU. The second number is what each actor's calibration does not count as other work on the machine
    (``actors/costs/calibrate.py``'s trust verdict): its siblings calibrate and run beside it by design (counted as if
    on its machine: on a multi-node cluster an upper bound)."""
    share = max(1, int(cpus // max(1, sum(s.copies for s in specs if not s.num_gpus))))
    held = sum(s.copies * (1 if s.num_gpus else share) for s in specs)
    return {s.label: (None if s.num_gpus else share, float(held - (1 if s.num_gpus else share))) for s in specs}


@dataclass
class InProcessBackend:
    """PairActors built in this process; tasks run sequentially (one copy per pair is enough)."""

    actors: dict = field(default_factory=dict)
    progress: Callable[[str], None] | None = None    # each actor's start phases, as they happen

    def start(self, specs: list[ActorSpec]) -> dict[str, list[dict]]:
        from actors.pair_actor import PairActor  # heavy: torch

        infos = {}
        for s in specs:
            try:
                self.actors[s.label] = PairActor(**s.kwargs, progress=self.progress)
                infos[s.label] = [self.actors[s.label].info()]
            except Exception as e:
                raise ActorStartError(s.label, e) from e
        return infos

    def batch_surface(self, sizes: list[int]) -> dict[str, list[dict]]:
        """Each actor's info after it measured the batch cost surface at ``sizes`` (``PairActor.batch_surface``)."""
        return {label: [actor.batch_surface(sizes)] for label, actor in self.actors.items()}

    def run(self, tasks: list[dict], on_result: OnResult) -> None:
        for task in tasks:
            try:
                result = self.actors[task["pair"]].run_task(task)
            except Exception as e:   # handed on like a Ray task failure
                on_result(task, None, e)
            else:
                on_result(task, result, None)

    def stop(self) -> None:
        self.actors.clear()


@dataclass
class RayBackend:
    """PairActors as Ray actors on the connected cluster; ``resources`` = ``ray.cluster_resources()``."""

    resources: dict
    actors: dict = field(default_factory=dict)
    groups: list = field(default_factory=list)       # placement groups of GPU actors
    names: set = field(default_factory=set)          # actor names (label@host:pid) seen so far
    on_started: Callable[[], None] | None = None     # called once the actors are up (the sweep records its cluster)
    progress: Callable[[str], None] | None = None    # "n of m actors ready" every STARTING_LINE_S while they start

    def start(self, specs: list[ActorSpec]) -> dict[str, list[dict]]:
        import ray  # heavy: ray

        check_placeable([(s.label, s.num_gpus) for s in specs if s.num_gpus for _ in range(s.copies)],
                        [n.get("Resources", {}).get("GPU", 0.0) for n in ray.nodes() if n.get("Alive")])
        shares = cpu_shares(specs, self.resources.get("CPU", 1))
        actor_class = ray_pair_actor()
        # GPU reservations largest first, as check_placeable packed them: small ones spread first could
        # leave no node whole for a larger one
        places = {(s.label, i): self._one_node(s.label, s.num_gpus)
                  for s in sorted(specs, key=lambda s: -s.num_gpus) if s.num_gpus for i in range(s.copies)}
        for s in specs:
            threads, siblings = shares[s.label]
            remote = ray.remote(num_gpus=s.num_gpus, num_cpus=s.num_cpus if not s.num_gpus else 0,
                                max_restarts=2, max_task_retries=2)(actor_class)
            acts = []
            for i in range(s.copies):
                opts = {"name": f"{s.name}-{i}".replace("/", "_"), "get_if_exists": False} if s.name else {}
                if (s.label, i) in places:
                    opts["scheduling_strategy"] = places[(s.label, i)]
                acts.append(remote.options(**opts).remote(**s.kwargs, threads=threads, sibling_cpus=siblings))
            self.actors[s.label] = acts
        self._wait_started()
        infos = {}
        for label, acts in self.actors.items():
            try:
                infos[label] = ray.get([a.info.remote() for a in acts])
            except Exception as e:
                raise ActorStartError(label, e) from e
        self.names = {i["actor"] for acts in infos.values() for i in acts}
        if self.on_started is not None:
            self.on_started()
        return infos

    def _wait_started(self) -> None:
        """Wait until every actor answers (or fails: the caller's ``ray.get`` reports it), saying every
        :data:`STARTING_LINE_S` how many are ready and which pairs are still loading or calibrating."""
        import ray  # heavy: ray

        refs = {a.info.remote(): label for label, acts in self.actors.items() for a in acts}
        pending, t0 = list(refs), time.monotonic()
        while pending:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=STARTING_LINE_S)
            if pending and self.progress is not None:
                waiting = ", ".join(sorted({refs[r] for r in pending}))
                self.progress(f"{len(refs) - len(pending)} of {len(refs)} actor(s) ready after "
                              f"{time.monotonic() - t0:.0f} s; still starting (models, warm-up, cost model): {waiting}")

    def batch_surface(self, sizes: list[int]) -> dict[str, list[dict]]:
        """Each actor's info after it measured the batch cost surface at ``sizes`` (``PairActor.batch_surface``)."""
        import ray  # heavy: ray

        return {label: ray.get([a.batch_surface.remote(sizes) for a in acts]) for label, acts in self.actors.items()}

    def _one_node(self, label: str, gpus: float):
        """A STRICT_PACK placement group holding ``gpus`` GPUs on one node, ready or refused within the timeout."""
        import ray  # heavy: ray
        from ray.util.placement_group import placement_group  # heavy: ray
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy  # heavy: ray

        pg = placement_group([{"GPU": gpus, "CPU": 0.001}], strategy="STRICT_PACK")
        ready, _ = ray.wait([pg.ready()], timeout=PLACE_TIMEOUT_S)
        if not ready:
            ray.util.remove_placement_group(pg)
            raise SpecsweepError(f"pair {label}: no node could give {gpus:g} GPUs within {PLACE_TIMEOUT_S} s "
                                 "(other work holds them?); free GPUs or lower num_gpus")
        self.groups.append(pg)
        return PlacementGroupSchedulingStrategy(placement_group=pg, placement_group_capture_child_tasks=True)

    def run(self, tasks: list[dict], on_result: OnResult) -> None:
        import ray  # heavy: ray

        queues = {label: [t for t in tasks if t["pair"] == label] for label in self.actors}
        tries: dict[str, int] = {}
        load = {id(a): 0 for acts in self.actors.values() for a in acts}
        inflight: dict = {}

        def submit() -> None:
            for label, acts in self.actors.items():
                for a in sorted(acts, key=lambda a: load[id(a)]):
                    while queues[label] and load[id(a)] < IN_FLIGHT:
                        task = queues[label].pop(0)
                        inflight[a.run_task.remote(task)] = (task, a)
                        load[id(a)] += 1

        submit()
        while inflight:
            (ref,), _ = ray.wait(list(inflight), num_returns=1)
            task, actor = inflight.pop(ref)
            load[id(actor)] -= 1
            try:
                result = ray.get(ref)
            except ray.exceptions.ActorUnavailableError as e:
                # the actor's node or process went away mid-task and Ray is restarting it; Ray does not retry a task
                # that "may have run". A task's rows reach the log only through this loop, so running it again
                # cannot write it twice. (An ActorDiedError means Ray's own restarts and retries are spent.)
                tries[task["task_key"]] = tries.get(task["task_key"], 0) + 1
                if tries[task["task_key"]] > RESUBMITS:
                    on_result(task, None, e)
                else:
                    time.sleep(2 ** tries[task["task_key"]])        # give Ray time to restart the actor
                    queues[task["pair"]].insert(0, task)
            except Exception as e:   # actor died for good / retries exhausted / unserialisable error
                on_result(task, None, e)
            else:
                self._note_restart(task, result)
                on_result(task, result, None)
            submit()

    def _note_restart(self, task: dict, result: dict) -> None:
        """Say once per new actor process that an actor came back (its node was lost or its process died)."""
        names = set(result["rows"].column("actor").to_pylist()) - {None, ""}
        for name in sorted(names - self.names):
            print(f"specsweep: pair {task['pair']}: actor restarted as {name} (its node was lost or its process "
                  "died); its unfinished tasks ran again there and each is recorded once", file=sys.stderr)
        self.names |= names

    def stop(self) -> None:
        """Free the actors' CPUs/GPUs for whatever runs next on the cluster."""
        import ray  # heavy: ray

        for acts in self.actors.values():
            for a in acts:
                ray.kill(a, no_restart=True)
        self.actors.clear()
        for pg in self.groups:
            ray.util.remove_placement_group(pg)
        self.groups.clear()


def ray_pair_actor():
    """``PairActor`` whose ``info`` also says where Ray placed it: node id, the GPU ids Ray assigned, and
    ``CUDA_VISIBLE_DEVICES`` as Ray set it (torch numbers those GPUs from 0, whichever they are)."""
    import ray  # heavy: ray

    from actors.pair_actor import PairActor  # heavy: torch

    class RayPairActor(PairActor):
        def info(self) -> dict:
            ctx = ray.get_runtime_context()
            return {**super().info(), "node": ctx.get_node_id(), "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
                    "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", "")}

    return RayPairActor
