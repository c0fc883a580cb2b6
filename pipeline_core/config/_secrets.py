"""Keeping secrets out of what Sluice prints about a config.

Two kinds of secret are hidden: the value of every ``${VAR}`` whose name looks secret (see
:func:`looks_secret`), wherever it ended up in a value, and the password of every URL
(``scheme://user:password@host``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MASK = "***"
"""What a hidden secret is printed as (SQLAlchemy's spelling for a URL's password)."""

SECRET_NAME_PARTS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "KEY", "CREDENTIAL")
"""A variable whose name holds one of these (in any case) is a secret."""

_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:)[^/?#\s]*(?=@)")
"""``scheme://user:`` then the password, up to the last ``@`` of the authority."""


def looks_secret(name: str) -> bool:
    """Whether a variable named ``name`` holds a secret (``DB_PASSWORD``, ``api_token``...)."""
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


_URL_SECRET_OPTION = re.compile(
    r"(?P<head>[?&][^=&#\s'\"]*(?:key|secret|token|password|passwd|credential|sig)[^=&#\s'\"]*=)"
    r"[^&#\s'\"]*",
    re.IGNORECASE,
)
"""A URL query option whose name looks secret (``?secret_key=``, ``&sas_token=``), then its
value."""


def mask_url_passwords(text: str) -> str:
    """``text`` with the password of every URL in it, and the value of every URL option whose
    name looks secret (``secret_key``, ``session_token``...), replaced by :data:`MASK`."""
    text = _URL_PASSWORD.sub(lambda match: match["head"] + MASK, text)
    return _URL_SECRET_OPTION.sub(lambda match: match["head"] + MASK, text)


@dataclass(frozen=True)
class SecretMask:
    """Hides secrets in text about a config: the given ``values`` (the values of secret
    variables) and URL passwords. Callable: ``mask(text) -> text``."""

    values: frozenset[str] = frozenset()

    @classmethod
    def of(cls, values: Iterable[str]) -> SecretMask:
        return cls(frozenset(value for value in values if value))

    def __call__(self, text: str) -> str:
        for value in sorted(self.values, key=len, reverse=True):  # a longer one may hold a shorter
            text = text.replace(value, MASK)
        return mask_url_passwords(text)
