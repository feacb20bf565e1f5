"""A hub id's first load: refused in seconds when it cannot come (not cached, hub unreachable), and announced when it
must be downloaded (the hub's own progress bars are off unless ``--verbose``)."""
from __future__ import annotations

import os
import socket
import sys
from urllib.parse import urlsplit

from huggingface_hub import constants as hub_constants, try_to_load_from_cache

from policies.errors import SpecsweepError

HUB_PROBE_TIMEOUT_S = 3.0


def check_hub_reachable(name: str, valid: str) -> None:
    """Return when ``name`` (a hub id) can load: from the cache (offline: without the hub's minute of retries), or
    from the reachable hub — saying on stderr that it downloads when the cache lacks it; else one line naming
    ``valid`` names."""
    cached = isinstance(try_to_load_from_cache(name, "config.json"), str)
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return
    endpoint = urlsplit(hub_constants.ENDPOINT)
    try:
        socket.create_connection((endpoint.hostname, endpoint.port or 443), timeout=HUB_PROBE_TIMEOUT_S).close()
    except OSError as e:
        if cached:
            os.environ["HF_HUB_OFFLINE"] = "1"          # cached: load it without the hub's retries
            return
        raise SpecsweepError(f"cannot load model {name!r}: it is not a local folder, not in the Hugging Face cache, "
                             f"and the hub is not reachable ({endpoint.hostname} unreachable: "
                             f"{e.strerror or type(e).__name__}); valid: {valid}") from None
    if not cached:
        sys.stderr.write(f"specsweep: {name} is not in the Hugging Face cache: downloading it from "
                         f"{endpoint.hostname} (many GB for a large model; --verbose shows the hub's progress)\n")
        sys.stderr.flush()
