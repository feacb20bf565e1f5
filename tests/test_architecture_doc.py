"""docs/architecture.md names only modules that exist, and names one owner for each rule."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "architecture.md").read_text()


def test_every_module_path_on_the_page_exists():
    paths = set(re.findall(r"\b((?:actors|policies|cluster|jobs|bench|tests)/[\w/]*\w\.py)\b", PAGE))
    assert len(paths) > 20
    missing = sorted(p for p in paths if not (ROOT / p).is_file())
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_each_rule_has_one_named_owner():
    table = PAGE.split("## Each rule's one home", 1)[1].split("## ", 1)[0]
    owners = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1].startswith("`"):
            owners[cells[0]] = re.findall(r"`([\w/]+\.py)`", cells[1])
    for rule in ("speculative step", "accept/reject", "derived figures", "costs", "parameters with types"):
        hit = [o for r, o in owners.items() if rule in r]
        assert len(hit) == 1 and len(hit[0]) == 1, f"rule {rule!r} needs exactly one owner module, got {hit}"
