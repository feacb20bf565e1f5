"""``specsweep recommend``: the serving-engine config a sweep's measurements support (docs/recommend.md)."""
