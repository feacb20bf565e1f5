"""The one rule for keeping secrets out of everything specsweep prints, logs or sends to MLflow.

Two kinds of secret travel inside URIs: the user-info of ``scheme://user:password@host`` (the
password may hold ``/``, ``+``, ``@`` or their percent-encodings, so everything up to the token's
last ``@`` is masked) and credential-like query parameters (``?access_token=…``, ``&sig=…``).
"""
from __future__ import annotations

import re

_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^\s]*@")        # greedy: up to the last @ of the token
SECRET_QUERY_KEYS = ("access_token", "token", "api_key", "apikey", "key", "sig", "signature", "password", "passwd",
                     "pwd", "secret", "client_secret", "auth", "credential", "x-amz-signature", "x-amz-credential",
                     "x-amz-security-token", "sas", "code")
_QUERY = re.compile(r"([?&;](?:" + "|".join(re.escape(k) for k in SECRET_QUERY_KEYS) + r")=)[^&;#\s'\"]*",
                    re.IGNORECASE)


def redact(text) -> str:
    """``text`` (any value, as a string) with URI user-info and secret query values replaced by ``***``:
    ``http://u:p/w@h/x?token=t&a=1`` → ``http://***@h/x?token=***&a=1``."""
    return _QUERY.sub(r"\1***", _USERINFO.sub(r"\1***@", str(text)))
