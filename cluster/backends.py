"""Where PairActors live and how sweep tasks reach them: Ray actors, or this process.

Both backends take the same :class:`ActorSpec` s and task dicts and give every task's
outcome — the actor's result or the exception that ended it — to one callback, in
completion order. The driver (``jobs/sweep/driver.py``) owns what happens with a result;
the backend owns only placement and the in-flight loop.

* :class:`RayBackend`: one Ray actor per pair copy, pinned to its GPUs (or CPU
  threads); at most :data:`IN_FLIGHT` tasks queued per actor, so a slow actor never
  hoards work and a finished task is handed on at once (``ray.wait``). Actors restart
  at most twice and retry a task at most twice; what still fails is handed to the
  callback as an exception.
* :class:`InProcessBackend`: the same ``PairActor`` class built in this process, tasks
  run one after another. No Ray, no serialisation: fast tests and debugging.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

IN_FLIGHT = 2          # tasks queued per Ray actor: one running, one ready to start


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


@dataclass
class InProcessBackend:
    """PairActors built in this process; tasks run sequentially (one copy per pair is enough)."""

    actors: dict = field(default_factory=dict)

    def start(self, specs: list[ActorSpec]) -> dict[str, list[dict]]:
        from actors.pair_actor import PairActor  # heavy: torch

        infos = {}
        for s in specs:
            try:
                self.actors[s.label] = PairActor(**s.kwargs)
                infos[s.label] = [self.actors[s.label].info()]
            except Exception as e:
                raise ActorStartError(s.label, e) from e
        return infos

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

    def start(self, specs: list[ActorSpec]) -> dict[str, list[dict]]:
        import ray  # heavy: ray

        from actors.pair_actor import PairActor  # heavy: torch

        cpus = self.resources.get("CPU", 1)
        cpu_actors = sum(s.copies for s in specs if not s.num_gpus)
        for s in specs:
            # CPU actors share the machine's cores evenly; a GPU actor leaves torch's default
            threads = max(1, int(cpus // max(1, cpu_actors))) if not s.num_gpus else None
            remote = ray.remote(num_gpus=s.num_gpus, num_cpus=s.num_cpus if not s.num_gpus else 0,
                                max_restarts=2, max_task_retries=2)(PairActor)
            opts = [remote.options(name=f"{s.name}-{i}".replace("/", "_"), get_if_exists=False) if s.name else remote
                    for i in range(s.copies)]
            self.actors[s.label] = [o.remote(**s.kwargs, threads=threads) for o in opts]
        infos = {}
        for label, acts in self.actors.items():
            try:
                infos[label] = ray.get([a.info.remote() for a in acts])
            except Exception as e:
                raise ActorStartError(label, e) from e
        return infos

    def run(self, tasks: list[dict], on_result: OnResult) -> None:
        import ray  # heavy: ray

        queues = {label: [t for t in tasks if t["pair"] == label] for label in self.actors}
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
            except Exception as e:   # actor died for good / retries exhausted / unserialisable error
                on_result(task, None, e)
            else:
                on_result(task, result, None)
            submit()

    def stop(self) -> None:
        """Free the actors' CPUs/GPUs for whatever runs next on the cluster."""
        import ray  # heavy: ray

        for acts in self.actors.values():
            for a in acts:
                ray.kill(a, no_restart=True)
        self.actors.clear()
