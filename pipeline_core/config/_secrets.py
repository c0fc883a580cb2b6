"""Keeping secrets out of what Sluice prints: about a config, and wherever a URL may show.

Two kinds of secret are hidden: the value of every ``${VAR}`` whose name looks secret (see
:func:`looks_secret`), wherever it ended up in a value, and the secrets of every URL
(:func:`mask_url_passwords`: ``scheme://user:password@host`` and options named like secrets,
``?api_key=``, ``&password=``..., written plainly or percent-encoded).

Mask first, then cut or escape: a message that quotes a value (``repr``, ``reprlib``) is built
from the masked value, never masked afterwards (an escaped or cut secret no longer matches).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote_plus

MASK = "***"
"""What a hidden secret is printed as (SQLAlchemy's spelling for a URL's password)."""

SECRET_NAME_PARTS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "KEY", "CREDENTIAL")
"""A variable whose name holds one of these (in any case) is a secret."""

SECRET_OPTION_PARTS = (
    "key",
    "secret",
    "token",
    "password",
    "passwd",
    "pwd",
    "credential",
    "sig",
    "auth",
)
"""A URL option (query or fragment parameter) whose name holds one of these (in any case) is a
secret: ``api_key``, ``apikey``, ``access_token``, ``sig``, ``signature``, ``X-Amz-Credential``,
``password``..."""

_AUTHORITY_START = re.compile(r"[A-Za-z0-9+.-](?:(?P<plain>://)|%3A%2F%2F)", re.IGNORECASE)
"""Where a URL's authority starts: after ``scheme://``, or percent-encoded ``scheme%3A%2F%2F``
(a URL inside another URL's option). No pattern here backtracks over a long run of text:
masking runs over text that others write (answers, log lines)."""
_AUTHORITY_END = re.compile(r"[/?#\s]")
_COLON = re.compile(":")
_ENCODED_COLON = re.compile("%3A", re.IGNORECASE)
_ENCODED_AUTHORITY_END = re.compile(r"[/?#&\s'\"]|%2F|%3F|%23", re.IGNORECASE)

_OPTION_HEAD = re.compile(
    r"(?:^|[?&#;=\s(,]|%3F|%26|%23|%3D)(?P<name>(?:[\w.\[\]-]|%5F|%2D|%2E)+)(?:=|%3D)",
    re.IGNORECASE,
)
"""A URL option's delimiter, name and ``=`` (also percent-encoded: ``%26password%3D``; also
a ``name=value`` pair in text, after a blank, ``(`` or ``,``; also
inside another option's value)."""
_OPTION_VALUE_END = re.compile(r"[&#\s'\"),]|%26", re.IGNORECASE)


def looks_secret(name: str) -> bool:
    """Whether a variable named ``name`` holds a secret (``DB_PASSWORD``, ``api_token``...)."""
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
"""Request headers that carry credentials whatever their value; so does any header whose name
looks secret (:func:`looks_secret`: ``X-Api-Key``, ``X-Auth-Token``...) or holds ``auth``."""


def looks_secret_option(name: str) -> bool:
    """Whether a URL option (a query parameter) named ``name`` holds a secret (``api_key``,
    ``access_token``, ``sig``, ``password``...: :data:`SECRET_OPTION_PARTS`), percent-encoded
    or not (``api%5Fkey``)."""
    lower = unquote_plus(name).lower()
    return any(part in lower for part in SECRET_OPTION_PARTS)


def is_credential_header(name: str) -> bool:
    """Whether an HTTP request header named ``name`` carries credentials
    (:data:`CREDENTIAL_HEADERS`)."""
    lower = name.lower()
    return lower in CREDENTIAL_HEADERS or looks_secret(name) or "auth" in lower


def mask_url_passwords(text: str) -> str:
    """``text`` with the secrets of every URL in it replaced by :data:`MASK`: the password of
    its userinfo (``scheme://user:***@host``) and the value of every option whose name looks
    secret (:data:`SECRET_OPTION_PARTS`), in plain and percent-encoded forms.

    The one masking function for URLs: whatever shows a URL (an exception, a log line, a sink's
    ``last_error``, the state page, a command line) passes it through here first, before
    cutting it short or escaping it."""
    return _mask_options(_mask_userinfo(text))


def _mask_userinfo(text: str) -> str:
    """``scheme://user:***@host``: the password is what follows the userinfo's first ``:``,
    up to the authority's last ``@`` (``%3A`` and ``%40`` in an encoded URL)."""
    shown: list[str] = []
    done = 0
    for match in _AUTHORITY_START.finditer(text):
        start = match.end()
        if start < done:
            continue
        plain = match["plain"] is not None
        end_of = (_AUTHORITY_END if plain else _ENCODED_AUTHORITY_END).search(text, start)
        authority = text[start : end_of.start() if end_of else len(text)]
        userinfo = authority[: max(authority.rfind("@" if plain else "%40"), 0)]
        colon = (_COLON if plain else _ENCODED_COLON).search(userinfo)
        if colon is None:
            continue
        password_start = start + colon.end()
        shown += [text[done:password_start], MASK]
        done = start + len(userinfo)
    return "".join(shown) + text[done:] if shown else text


def _mask_options(text: str) -> str:
    """``?api_key=***``: the value of every option whose name looks secret, up to the next
    ``&``, ``#``, blank or quote (``%26`` in an encoded option)."""
    shown: list[str] = []
    done = 0
    position = 0
    while (match := _OPTION_HEAD.search(text, position)) is not None:
        if not looks_secret_option(match["name"]):
            position = match.end("name")  # its "=" may start an option inside its value
            continue
        end_of = _OPTION_VALUE_END.search(text, match.end())
        end = end_of.start() if end_of else len(text)
        shown += [text[done : match.end()], MASK]
        done = position = end
    return "".join(shown) + text[done:] if shown else text


def _escaped_forms(value: str) -> set[str]:
    """``value`` and how ``repr`` and JSON print it (backslashes and quotes escaped)."""
    forms = {value, repr(value)[1:-1], json.dumps(value)[1:-1]}
    forms.add(value.replace("\\", "\\\\").replace("'", "\\'"))
    forms.add(value.replace("\\", "\\\\").replace('"', '\\"'))
    return {form for form in forms if form}


@dataclass(frozen=True)
class SecretMask:
    """Hides secrets in text about a config: the given ``values`` (the values of secret
    variables, also as ``repr`` and JSON escape them) and URL secrets
    (:func:`mask_url_passwords`). Callable: ``mask(text) -> text``."""

    values: frozenset[str] = frozenset()

    @classmethod
    def of(cls, values: Iterable[str]) -> SecretMask:
        return cls(frozenset(value for value in values if value))

    def __call__(self, text: str) -> str:
        forms = {form for value in self.values for form in _escaped_forms(value)}
        for form in sorted(forms, key=len, reverse=True):  # a longer one may hold a shorter
            text = text.replace(form, MASK)
        return mask_url_passwords(text)
