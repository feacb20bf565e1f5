import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from hypothesis import settings

# Property tests draw the same examples every run: a flaky suite blocks landing.
settings.register_profile("specsweep", derandomize=True, print_blob=True)
settings.load_profile("specsweep")
