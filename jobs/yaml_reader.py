"""Reading a sweep config's YAML: the safe loader, unique keys, merge keys, and a bound on alias expansion."""
from __future__ import annotations

from pathlib import Path

import yaml

from policies.errors import SpecsweepError


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that names one key twice (PyYAML would keep the last silently)."""


MERGE_TAG = "tag:yaml.org,2002:merge"
MAX_VALUES = 100_000          # a config expanded through aliases beyond this is refused (billion-laughs files)


def _mapping(loader, node, deep=False):
    """A mapping whose explicit keys are unique; ``<<: *defaults`` merge keys work as YAML defines them."""
    seen = set()
    for key_node, _ in node.value:
        if key_node.tag == MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise SpecsweepError(f"line {key_node.start_mark.line + 1}: key {key!r} appears twice in one mapping")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


MAX_BYTES = 2 ** 20          # a sweep config or policy file: far above any real one, far below a stalled parser


def _check_expanded_size(raw, path: str) -> None:
    """Refuse a document whose aliases expand past ``MAX_VALUES`` values (counted without expanding it)."""
    count, stack = 0, [raw]
    while stack:
        v = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise SpecsweepError(f"{path}: the config expands to more than {MAX_VALUES} values through YAML aliases; "
                                 "write it out or use fewer nested aliases")
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _yaml_problem(e: yaml.YAMLError) -> str:
    """What the parser found and where: ``"expected ',' or ']', but got ':' at line 3, column 9"``."""
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    mark = getattr(e, "problem_mark", None)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else problem


def read_yaml_mapping(path: str) -> dict:
    """The YAML mapping in ``path``: a missing file, invalid YAML, a repeated key, a non-mapping or an alias bomb is
    refused in one line."""
    p = Path(path)
    if not p.exists():
        raise SpecsweepError(f"config file {path} does not exist")
    if not p.is_file():
        raise SpecsweepError(f"config file {path} is not a file")
    if p.stat().st_size > MAX_BYTES:
        raise SpecsweepError(f"config file {path} holds {p.stat().st_size} bytes; a config is at most {MAX_BYTES} "
                             "bytes (list questions in a dataset file instead)")
    try:
        raw = yaml.load(p.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        raise SpecsweepError(f"{path}: not valid YAML ({_yaml_problem(e)})") from None
    except UnicodeDecodeError:
        raise SpecsweepError(f"{path}: not a UTF-8 text file") from None
    except SpecsweepError as e:
        raise SpecsweepError(f"{path}: {e}") from None
    if not isinstance(raw, dict):
        raise SpecsweepError(f"{path}: expected a YAML mapping at the top level")
    _check_expanded_size(raw, path)
    return raw
