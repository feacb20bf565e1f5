"""Everything that touches models: loading target/draft pairs, the speculative engine and its drafters, cost
calibration and the replay cost model, rollout traces, and ``PairActor``, which serves sweep tasks on one device."""
