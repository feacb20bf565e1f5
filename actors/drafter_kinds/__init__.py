"""The drafter registry: every drafter kind in one module of this package, registered in one place.

``kind.py`` is the record (:class:`~actors.drafter_kinds.kind.DrafterKind`): a name, which draft names it
claims, its loader, its file checks, its memory-plan entry, its rollout recorder and whether
it reads the target's features. ``model.py`` (an independent causal LM), ``ngram.py`` (prompt lookup),
``suffix.py`` (suffix decoding), ``eagle.py`` (an EAGLE-1/2 feature head) and ``eagle3.py`` (an EAGLE-3 head) each
build one record;
``registry.py`` lists them (the one place a kind is registered) and answers which kind a draft name or a
drafter is. No code outside this package switches on the drafter kind (``tests/test_drafter_registry.py``
walks the AST).
"""
