"""Third-party chatter that tells a specsweep user nothing, silenced where a process starts.

Loading a model prints weight-loading progress bars, torchao's optional-kernel load failures and
torch's pytree registration notices even when no quantization was asked for. The CLI (and each
Ray actor) calls :func:`quiet_third_party` before anything heavy is imported; ``--verbose`` skips
it. specsweep's own warnings and progress lines are untouched: only the packages named here are
filtered, and only below ERROR. A third-party bar no switch reaches (transformers' GGUF conversion calls
``tqdm`` itself) is hidden where specsweep calls that code, inside :func:`third_party_bars_off`.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from functools import partialmethod

from tqdm import std as tqdm_std

VERBOSE_ENV = "SPECSWEEP_VERBOSE"   # "1": the CLI was given --verbose (Ray actors read it from their environment)
NOISY_PACKAGES = ("torch", "torchao", "transformers", "accelerate", "optimum", "huggingface_hub", "gguf",
                  "safetensors")
NOISY_LOGGERS = ("torchao", "torch.utils._pytree", "torch._dynamo", "torch._inductor", "transformers",
                 "accelerate", "optimum.quanto", "huggingface_hub")


def quiet_third_party(verbose: bool = False) -> None:
    """Silence third-party progress bars, warnings and log lines below ERROR (no-op when ``verbose``)."""
    if verbose:
        os.environ[VERBOSE_ENV] = "1"
        return
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")      # transformers' bars read this at import
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")   # its bars on sub-second downloads
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    pattern = r"(" + "|".join(NOISY_PACKAGES) + r")(\..*)?$"
    warnings.filterwarnings("ignore", module=pattern)
    if "huggingface_hub" in sys.modules:                            # imported before us: it read the variable already
        sys.modules["huggingface_hub"].utils.disable_progress_bars()    # transformers reads this state at its import
    if "transformers" in sys.modules:                                   # imported before us: switch its bars off too
        from transformers.utils import logging as hf_logging  # heavy: transformers (already imported here)

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()


@contextlib.contextmanager
def third_party_bars_off():
    """Every ``tqdm`` bar made inside the block is disabled (one that passes ``disable`` itself keeps it), unless
    ``--verbose`` (:data:`VERBOSE_ENV` is "1"); the bars of tqdm made outside it are untouched. For third-party code
    that draws a bar no switch of :func:`quiet_third_party` reaches; specsweep's own bars are made outside it."""
    if os.environ.get(VERBOSE_ENV) == "1":
        yield
        return
    own = tqdm_std.tqdm.__dict__["__init__"]                   # a function, or the partialmethod of tqdm's TQDM_* env
    tqdm_std.tqdm.__init__ = partialmethod(own, disable=True)  # tqdm.auto's classes call it through super()
    try:
        yield
    finally:
        tqdm_std.tqdm.__init__ = own
