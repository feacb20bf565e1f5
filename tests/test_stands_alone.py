"""The project stands alone: no file cites a document outside this repository, and every docs/ page the
code names exists (the definitions the code relies on live in docs/)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".sh", "run")
OUTSIDE = re.compile(r"\bGUIDE\b|\.\./shared|shared/seeds|DEVELOPERS\.md")
DOC_REF = re.compile(r"\bdocs/([A-Za-z0-9_\-]+\.md)")


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / n for n in names if n.endswith(TEXT) and (ROOT / n).is_file()]


def test_no_file_cites_a_document_outside_the_repository():
    me = Path(__file__).resolve()
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in tracked_text_files() if p.resolve() != me
            for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if OUTSIDE.search(line)]
    assert not hits, hits


def test_every_docs_page_the_code_names_exists():
    missing = sorted({f"{p.relative_to(ROOT)} → docs/{m}" for p in tracked_text_files()
                      for m in DOC_REF.findall(p.read_text(encoding="utf-8", errors="replace"))
                      if not (ROOT / "docs" / m).exists()})
    assert not missing, missing
