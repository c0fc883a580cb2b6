"""File names as any byte string, end to end: the one place a path changes form.

A POSIX file name is any string of bytes but NUL and ``/``. Python holds a path as ``str``
decoded with the filesystem encoding and ``surrogateescape`` (``os.fsdecode``): a byte that does
not decode becomes a lone surrogate (``b"\\xff"`` is ``"\\udcff"``). That *in-memory form*
opens the file, but it cannot be encoded as UTF-8, so it cannot go into the metastore, into
JSON another program reads, onto a terminal or into a log as it is. A name that does decode
may still hold control characters (a newline, an escape sequence) that forge lines on a
terminal or in a log. Sluice keeps every path in its in-memory form and converts it here, and
only here, where it leaves the process:

* :func:`stored_path` -- text to store (the metastore's ``sluice_files.path``, the staging
  manifest's ``ranges[].path``, a spooled batch's seal record): a name whose bytes are valid
  UTF-8 is stored as that text, exactly as before (databases written before need no
  migration); any other name is stored as :data:`ESCAPED_PREFIX` followed by its shown form.
  Discovered paths are absolute (they start with ``/``), so a stored value starting with the
  prefix is never an unescaped path; a valid name that starts with it all the same (relative)
  is stored escaped too, so every stored value reads back unambiguously. The result is valid
  UTF-8 without NUL: SQLite and PostgreSQL ``text`` take it.
* :func:`restored_path` -- the in-memory form of a stored value (``restored_path(
  stored_path(p)) == p`` for every path ``p`` that names a file). Lenient: a value in the
  in-memory form (surrogates), or a backslash that starts no escape, is read as it is.
* :func:`shown_path` -- one printable line for people and for values others parse (``sluice
  status`` and ``validate``, the state page and its JSON, log messages, metrics labels): the
  name decoded as UTF-8, each byte that does not decode written ``\\xHH``, a backslash
  ``\\\\``, and each character that is not printable (control and format characters, line
  and paragraph separators, spaces other than the plain one) written ``\\xHH`` (below 0x80),
  ``\\uHHHH`` or ``\\UHHHHHHHH``. It holds no control character, and it is reversible:
  ``\\xHH`` of 0x80 and above is always a byte that did not decode, since such characters are
  written ``\\u00HH``.

Standard library only; safe from any thread.
"""

from __future__ import annotations

import os
import re

__all__ = ["ESCAPED_PREFIX", "AnyPath", "restored_path", "shown_path", "stored_path"]

AnyPath = str | bytes | os.PathLike[str] | os.PathLike[bytes]
"""A path in its in-memory form (``str``), as raw bytes, or an ``os.PathLike`` of either."""

ESCAPED_PREFIX = "escaped:"
"""Starts a stored path that is written in its shown form (see :func:`stored_path`)."""

_ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(\\))")


def stored_path(path: AnyPath) -> str:
    """``path`` as text to store: its bytes decoded as UTF-8 when they are valid UTF-8 (and do
    not start with :data:`ESCAPED_PREFIX`), else :data:`ESCAPED_PREFIX` + :func:`shown_path`."""
    raw = _raw(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ESCAPED_PREFIX + shown_path(raw)
    return ESCAPED_PREFIX + shown_path(raw) if text.startswith(ESCAPED_PREFIX) else text


def restored_path(stored: str) -> str:
    """The in-memory form (``os.fsdecode`` of the name's bytes) of a :func:`stored_path`."""
    if stored.startswith(ESCAPED_PREFIX):
        return os.fsdecode(_unescaped(stored[len(ESCAPED_PREFIX) :]))
    return os.fsdecode(_utf8(stored))


def shown_path(path: AnyPath) -> str:
    """``path`` escaped to one printable line (see the module's docstring)."""
    text = _raw(path).decode("utf-8", "surrogateescape")
    if text.isprintable() and "\\" not in text:
        return text  # the common case: nothing to escape
    shown: list[str] = []
    for char in text:
        code = ord(char)
        if char == "\\":
            shown.append("\\\\")
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that did not decode (surrogateescape)
            shown.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            shown.append(char)
        elif code < 0x80:
            shown.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            shown.append(f"\\u{code:04x}")
        else:
            shown.append(f"\\U{code:08x}")
    return "".join(shown)


def _raw(path: AnyPath) -> bytes:
    """The name's bytes (a ``str`` that names no file -- a surrogate ``os.fsdecode`` never
    makes -- as UTF-8 with its surrogates kept, so that nothing here raises)."""
    value = os.fspath(path)
    if isinstance(value, bytes):
        return value
    try:
        return os.fsencode(value)
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


def _unescaped(shown: str) -> bytes:
    """The bytes a :func:`shown_path` stands for (text outside escapes as UTF-8)."""
    out = bytearray()
    at = 0
    for match in _ESCAPE.finditer(shown):
        byte, short, long, backslash = match.groups()
        code = int(short or long or "0", 16)
        if long is not None and code > 0x10FFFF:
            continue  # not an escape: kept as it is written
        out += _utf8(shown[at : match.start()])
        if byte is not None:
            out.append(int(byte, 16))
        elif backslash is not None:
            out += b"\\"
        else:
            out += chr(code).encode("utf-8", "surrogatepass")
        at = match.end()
    out += _utf8(shown[at:])
    return bytes(out)


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, a surrogate ``os.fsdecode`` made as its byte, any other kept."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
