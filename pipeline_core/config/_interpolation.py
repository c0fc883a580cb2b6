"""Environment variables in pipeline config values: ``${VAR}``, ``${VAR:-default}``, ``$$``.

Interpolation runs on the parsed YAML document, before validation, in string values only (never
in keys, never in numbers or booleans written as such). A variable's value is never parsed as
YAML: it becomes (part of) one string, which validation then reads like any written value
(``"${PORT}"`` validates as an integer where one is expected).

* ``${VAR}``: the value of ``VAR``; an error if it is not set (an empty value is a value).
* ``${VAR:-default}``: the value of ``VAR``, or ``default`` if it is unset or empty (the
  shell's rule). The default is taken as written: it cannot hold ``}`` or another reference.
* ``$$``: one literal ``$``. Any other ``$`` (``^a$``, ``$remote_addr``) stays as written.

Names are ``[A-Za-z_][A-Za-z0-9_]*``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline_core.config._secrets import looks_secret

_REFERENCE = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<body>[^}]*)\}|(?P<open>\{))")
_BODY = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


@dataclass
class Interpolation:
    """The outcome of :func:`interpolate`: the document with every reference replaced, what
    went wrong (one problem per line, ``key.path: message``) and the values that came from
    secret variables (to be hidden wherever the config is printed)."""

    document: Any
    problems: list[str] = field(default_factory=list)
    secret_values: set[str] = field(default_factory=set)


def interpolate(document: Any, environ: Mapping[str, str]) -> Interpolation:
    """Replace the references of every string value of ``document`` (a parsed YAML document)
    from ``environ``. The input is not changed.

    A mapping or list that YAML aliases share is walked once and stays shared, so a document of
    nested aliases costs what its text does, not what it expands to."""
    outcome = Interpolation(None)
    outcome.document = _Walk(environ, outcome).node(document, ())
    return outcome


class _Walk:
    def __init__(self, environ: Mapping[str, str], outcome: Interpolation) -> None:
        self._environ = environ
        self._outcome = outcome
        self._done: dict[int, Any] = {}
        """Containers walked already, by identity (the document keeps them alive)."""

    def node(self, node: Any, path: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            done = self._done.get(id(node))
            if done is None:  # registered before it is filled: a recursive alias ends here
                done = self._done[id(node)] = {}
                for key, value in node.items():
                    done[key] = self.node(value, (*path, str(key)))
            return done
        if isinstance(node, list):
            done = self._done.get(id(node))
            if done is None:
                done = self._done[id(node)] = []
                for index, item in enumerate(node):
                    done.append(self.node(item, (*path, str(index))))
            return done
        if isinstance(node, str) and "$" in node:
            return _substitute(node, ".".join(path) or "<top level>", self._environ, self._outcome)
        return node


def _substitute(text: str, key: str, environ: Mapping[str, str], out: Interpolation) -> str:
    def replace(match: re.Match[str]) -> str:
        if match["dollar"] is not None:
            return "$"
        if match["open"] is not None:
            out.problems.append(f"{key}: '${{' without a closing '}}' (write '$$' for a '$')")
            return match[0]
        body = _BODY.fullmatch(match["body"])
        if body is None:
            out.problems.append(
                f"{key}: {match[0]!r} is not a variable reference (${{NAME}} or "
                "${NAME:-default}; write '$$' for a '$')"
            )
            return match[0]
        name, default = body["name"], body["default"]
        if default is not None and "${" in default:
            out.problems.append(f"{key}: the default of ${{{name}}} holds another reference")
            return match[0]
        value = environ.get(name)
        if default is not None and not value:
            value = default
        if value is None:
            out.problems.append(
                f"{key}: environment variable {name} is not set "
                f"(write ${{{name}:-default}} to give a default)"
            )
            return match[0]
        if looks_secret(name):
            out.secret_values.add(value)
        return value

    return _REFERENCE.sub(replace, text)
