"""Test-session setup: environment, the hypothesis profile, and the two tiers.

Fast tier: ``python -m pytest -m "not slow"``. Slow tier: ``python -m pytest -m slow`` — exactly the
tests that start Ray, train, or run the real SmolLM2-135M for more than a few seconds. A test that
takes the ``cluster`` fixture starts Ray, so it is marked ``slow`` here; other slow tests carry the
marker where they are defined. pytest-xdist spreads the tests over the cores (``-n auto`` in
pyproject.toml); the slow ones share one worker, one after another, as Ray clusters and
timing-sensitive kill/resume tests need, and the tests of a module with a module-scoped fixture share
one worker so the fixture (a sweep, an MLflow server) is built once.
"""
import os

import pytest

if os.environ.get("PYTEST_XDIST_WORKER") and int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("OMP_NUM_THREADS", "1")      # one torch thread per worker: workers share the cores

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("SPECSWEEP_CPU_PACK", "never")   # pairs run dense unless a test asks: no timing probe decides
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from hypothesis import settings

# Property tests draw the same examples every run: a flaky suite blocks landing.
settings.register_profile("specsweep", derandomize=True, print_blob=True)
settings.load_profile("specsweep")


def _shares_a_module_fixture(item) -> bool:
    defs = getattr(item, "_fixtureinfo", None)
    return bool(defs) and any(d.scope in ("module", "package", "session") and d.baseid
                              for fd in defs.name2fixturedefs.values() for d in fd)


@pytest.hookimpl(tryfirst=True)             # before pytest-xdist reads the xdist_group markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "cluster" in item.fixturenames:                 # the fixture starts a local Ray cluster
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.xdist_group("serial"))
        elif _shares_a_module_fixture(item):               # built once per worker: keep its module on one worker
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    # Longest work first (pytest-xdist hands tests out in this order): grouped modules, then the rest.
    items.sort(key=lambda it: it.get_closest_marker("xdist_group") is None)
