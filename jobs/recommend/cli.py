"""``specsweep recommend OUTPUT --for vllm|sglang|trtllm [--out FILE] [--pair LABEL]``.

Reads the sweep's rows as the report shows them (``jobs/report/tables.py``), picks the configuration per batch size
(``jobs/recommend/selection.py``), writes the engine's own config text (``jobs/recommend/writers.py``), checks it
against the engine's schema (``jobs/recommend/schema.py``) and only then writes it: to FILE with the notes beside it
in FILE.md, or to stdout after the notes. Bad input (no log, no usable batch size, a drafter the engine does not
support, an unwritable FILE) is one line and exit status 2, with nothing written.
"""
from __future__ import annotations

import sys
from pathlib import Path

from jobs.recommend import engines
from jobs.recommend.schema import CHECKS
from jobs.recommend.selection import recommend
from jobs.recommend.writers import WRITERS, notes_md
from jobs.report.costs import untrusted_reasons
from jobs.report.metrics import ok_rows
from jobs.report.tables import shown_rows
from jobs.store.output import check_writable, write_texts
from jobs.store.parquet_log import ParquetLog
from policies.errors import SpecsweepError


def side_file(out: Path) -> Path:
    """Where the notes go beside ``out``: ``out`` with ``.md`` appended."""
    return out.with_name(out.name + ".md")


def main(a) -> int:
    out = check_writable(a.out, "--out", folder=False, what="file path", beside=(side_file(Path(a.out)),)) \
        if a.out else None
    log = ParquetLog(a.output)
    if not log.dir.is_dir():
        raise SpecsweepError(f"{a.output} holds no sweep log (expected {log.dir})")
    rows = log.read()
    rec = recommend(shown_rows(a.output, rows), a.engine, a.pair, untrusted=untrusted_reasons(a.output, ok_rows(rows)))
    text = WRITERS[a.engine](rec)
    CHECKS[a.engine](text)                      # never write a config the engine would refuse
    notes = notes_md(rec)
    if out is None:
        sys.stdout.write(notes + "\n" + text)
        return 0
    try:
        write_texts({out: text, side_file(out): notes})       # both or neither; what was there stays on an error
    except OSError as e:
        raise SpecsweepError(f"--out {a.out}: {e.strerror or e}") from None
    sys.stdout.write(notes)
    print(f"specsweep: {engines.LABELS[a.engine]} config in {out} (notes in {side_file(out)})", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    r = sub.add_parser("recommend", help="the serving config (vLLM, SGLang, TensorRT-LLM) a sweep's measurements "
                                         "support, per batch size")
    r.add_argument("output", help="a sweep's output folder")
    r.add_argument("--for", dest="engine", required=True, choices=engines.ENGINES, help="the serving engine")
    r.add_argument("--out", default=None, help="write the config here (its notes beside it, FILE.md); default: stdout")
    r.add_argument("--pair", default=None, help="the pair to recommend for when the sweep holds several")
    r.set_defaults(fn=main)
