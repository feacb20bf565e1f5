"""Everything Ray: connecting to or starting a cluster (``ray_setup.py``, loopback only for a local one)
and where PairActors run — Ray actors or this process — with the in-flight task loop (``backends.py``)."""
