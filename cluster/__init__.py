"""Everything Ray: connecting to or starting a cluster (``ray_setup.py``, loopback only for a local one), where
PairActors run — Ray actors or this process — with the in-flight task loop (``backends.py``), and the local
cluster a sweep started, recorded so that the next sweep stops what a killed one left running (``ray_session.py``)."""
