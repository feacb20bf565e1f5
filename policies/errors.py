"""The one error type for bad input anywhere in specsweep.

Every layer raises :class:`SpecsweepError` with a single line that names what is
wrong and what is valid; the CLI prints that line to stderr and exits non-zero
without a traceback. It lives in ``policies`` because that is the package every
other one already depends on.
"""


class SpecsweepError(ValueError):
    """Bad input or an unusable environment, explained in one line."""
