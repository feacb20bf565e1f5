"""Replay without models: the trace format, the replay engine and the oracle bound (a pair's traces are
recorded and replay tasks served by actors/rollouts.py and actors/replay_task.py, beside the actor)."""
