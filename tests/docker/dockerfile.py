"""Reading Dockerfiles and ``.dockerignore`` files the way ``docker build`` does, for static
checks (no Docker engine needed).

:func:`parse_dockerfile` splits a Dockerfile into :class:`Instruction` values: parser
directives (``# syntax=``, ``# escape=``) are read, comment lines dropped (also inside a
continued instruction), lines ending with the escape character joined, the exec (JSON) form
decoded, and ``COPY``/``ADD`` flags separated from their sources and destination. Heredocs
(``<<EOF``) are not supported and raise :class:`DockerfileError`.

:class:`DockerIgnore` answers whether a path of the build context is sent to the builder: the
patterns of ``<dockerfile>.dockerignore`` (BuildKit's per-Dockerfile file) or of
``<context>/.dockerignore``, matched as Docker does (``*`` and ``?`` within one path element,
``**`` across elements, a pattern matching a folder also matching what is in it, ``!``
re-including, the last matching pattern deciding).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

INSTRUCTIONS = frozenset(
    [
        "ADD",
        "ARG",
        "CMD",
        "COPY",
        "ENTRYPOINT",
        "ENV",
        "EXPOSE",
        "FROM",
        "HEALTHCHECK",
        "LABEL",
        "MAINTAINER",
        "ONBUILD",
        "RUN",
        "SHELL",
        "STOPSIGNAL",
        "USER",
        "VOLUME",
        "WORKDIR",
    ]
)
_DIRECTIVE = re.compile(r"^#\s*([a-zA-Z]+)\s*=\s*(.*?)\s*$")
_HEREDOC = re.compile(r"<<-?\s*['\"]?[A-Za-z_][A-Za-z0-9_]*")


class DockerfileError(ValueError):
    """The Dockerfile cannot be parsed (unknown instruction, dangling continuation...)."""


@dataclass(frozen=True)
class Instruction:
    """One instruction: its keyword (upper case), its arguments as written (continuations
    joined) and the line it starts on."""

    keyword: str
    value: str
    line: int
    exec_form: tuple[str, ...] | None = None
    """The arguments of the JSON form (``["a", "b"]``), else ``None``."""
    flags: dict[str, str] = field(default_factory=dict)
    """``COPY``/``ADD``/``FROM``/``RUN`` flags: ``--chown=airflow:0`` -> ``{"chown": ...}``."""
    arguments: tuple[str, ...] = ()
    """The words after the flags (shell-split, or the exec form)."""

    @property
    def sources(self) -> tuple[str, ...]:
        """``COPY``/``ADD``: every argument but the last."""
        return self.arguments[:-1]

    @property
    def destination(self) -> str:
        """``COPY``/``ADD``: the last argument."""
        return self.arguments[-1]


@dataclass(frozen=True)
class Dockerfile:
    path: Path
    directives: dict[str, str]
    instructions: tuple[Instruction, ...]

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    @property
    def base_images(self) -> list[str]:
        """The image of every ``FROM`` (``AS name`` dropped)."""
        return [i.arguments[0] for i in self.all("FROM")]


def parse_dockerfile(path: Path) -> Dockerfile:
    """Parse ``path``. Raises DockerfileError."""
    lines = path.read_text(encoding="utf-8").splitlines()
    directives: dict[str, str] = {}
    start = 0
    while start < len(lines) and (match := _DIRECTIVE.match(lines[start])):
        directives[match.group(1).lower()] = match.group(2)
        start += 1
    escape = directives.get("escape", "\\")
    if escape not in ("\\", "`"):
        raise DockerfileError(f"{path}: escape must be \\ or `, not {escape!r}")
    instructions: list[Instruction] = []
    pending: list[str] = []
    first_line = 0
    for number, text in enumerate(lines[start:], start=start + 1):
        stripped = text.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if not pending:
            first_line = number
        body = text.rstrip()
        if body.endswith(escape):
            pending.append(body[: -len(escape)])
            continue
        pending.append(body)
        instructions.append(_instruction(path, " ".join(p.strip() for p in pending), first_line))
        pending = []
    if pending:
        raise DockerfileError(f"{path}:{first_line}: the last instruction ends with a continuation")
    return Dockerfile(path, directives, tuple(instructions))


def _instruction(path: Path, text: str, line: int) -> Instruction:
    keyword, _, value = text.partition(" ")
    keyword = keyword.upper()
    value = value.strip()
    if keyword not in INSTRUCTIONS:
        raise DockerfileError(f"{path}:{line}: unknown instruction {keyword!r}")
    if _HEREDOC.search(value) and keyword in ("RUN", "COPY", "ADD"):
        raise DockerfileError(f"{path}:{line}: heredocs are not supported by this parser")
    flags: dict[str, str] = {}
    rest = value
    if keyword in ("COPY", "ADD", "FROM", "RUN"):
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            name, _, flag_value = flag[2:].partition("=")
            flags[name] = flag_value
            rest = rest.lstrip()
    exec_form: tuple[str, ...] | None = None
    if rest.startswith("["):
        try:
            decoded = json.loads(rest)
        except ValueError:
            decoded = None
        if isinstance(decoded, list) and all(isinstance(word, str) for word in decoded):
            exec_form = tuple(decoded)
    if exec_form is not None:
        arguments = exec_form
    elif keyword in ("RUN", "CMD", "ENTRYPOINT", "SHELL", "HEALTHCHECK"):
        arguments = (rest,)
    else:
        try:
            arguments = tuple(shlex.split(rest))
        except ValueError as exc:
            raise DockerfileError(f"{path}:{line}: {exc}") from exc
    if keyword == "FROM" and not arguments:
        raise DockerfileError(f"{path}:{line}: FROM needs an image")
    if keyword in ("COPY", "ADD") and len(arguments) < 2:
        raise DockerfileError(f"{path}:{line}: {keyword} needs a source and a destination")
    return Instruction(keyword, value, line, exec_form, flags, arguments)


# -- .dockerignore ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    exclude: bool


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(char, re.escape(char)))
        i += 1
    return re.compile("".join(out) + r"\Z")


def _clean(path: str) -> str:
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    return "/".join(parts)


class DockerIgnore:
    """The ignore rules of one build: :meth:`excludes` tells whether a context path is left
    out of what is sent to the builder."""

    def __init__(self, patterns: list[str]) -> None:
        self._patterns: list[_Pattern] = []
        for raw in patterns:
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            exclude = not text.startswith("!")
            cleaned = _clean(text.lstrip("!"))
            if cleaned:
                self._patterns.append(_Pattern(_pattern_regex(cleaned), exclude))

    @classmethod
    def for_build(cls, context: Path, dockerfile: Path) -> DockerIgnore:
        """BuildKit's rule: ``<dockerfile>.dockerignore`` beside the Dockerfile if it exists,
        else ``<context>/.dockerignore``, else nothing is ignored."""
        for candidate in (
            dockerfile.with_name(dockerfile.name + ".dockerignore"),
            context / ".dockerignore",
        ):
            if candidate.is_file():
                return cls(candidate.read_text().splitlines())
        return cls([])

    def excludes(self, path: str) -> bool:
        """Whether ``path`` (relative to the context) is left out of the build context."""
        cleaned = _clean(path)
        parts = cleaned.split("/")
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        excluded = False
        for pattern in self._patterns:
            if any(pattern.regex.match(candidate) for candidate in candidates):
                excluded = pattern.exclude
        return excluded
