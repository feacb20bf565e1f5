"""Benchmark scripts, each run from the repository root as a module: ``python -m bench.NAME``.

Rules every script here follows:
- run with ``-m`` from the repository root, so ``actors``, ``policies``, ``jobs`` and ``cluster``
  resolve to this checkout; no script edits ``sys.path``, and no script is named after a
  top-level package (``tests/test_bench_layout.py`` checks both).
- every speed claim is a ratio of configurations measured side by side in the same run.
- metrics (throughput, mean accepted length, acceptance rate, speedup and its interval) come
  from ``jobs/report/metrics.py``; no script recomputes one itself.
"""
