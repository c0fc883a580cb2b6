"""Realistic nginx "combined" access logs, with malformed lines and rotations, for demos and
tests."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

_PATHS = [
    "/",
    "/index.html",
    "/api/v1/orders",
    "/api/v1/orders/{n}",
    "/static/app.{n}.js",
    "/login",
    "/search?q=spark+{n}",
    "/health",
    "/images/{n}.png",
    "/dags/{n}/grid",
]
_AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 "
    "Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Safari/605.1.15",
    "curl/8.5.0",
    "Prometheus/2.53.0",
    "python-requests/2.32.3",
]
_STATUSES = (
    [200] * 40 + [201, 204, 301, 302, 304] * 3 + [400, 401, 403, 404, 404, 404, 500, 502, 503]
)
_METHODS = ["GET"] * 8 + ["POST", "PUT", "DELETE", "HEAD"]

MALFORMED_SAMPLES: tuple[bytes, ...] = (
    b"this is not an access log line",
    b'10.0.0.1 - - [not a time] "GET / HTTP/1.1" 200 12 "-" "-"',
    b'\xff\xfe\xfd invalid utf-8 "GET / HTTP/1.1" 200',
    b"\x00\x00 NUL bytes\x00 in the middle",
    b"x" * 70_000,
)
"""Lines the nginx parser must reject (one reason or another), never drop."""


def access_line(rng: random.Random, when: datetime) -> bytes:
    """One nginx "combined" line."""
    n = rng.randint(1, 5000)
    path = rng.choice(_PATHS).format(n=n)
    referer = rng.choice(["-", "https://example.com/", f"https://example.com/p/{n}"])
    user = rng.choice(["-"] * 9 + ["alice"])
    ip = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    stamp = when.strftime("%d/%b/%Y:%H:%M:%S +0000")
    return (
        f'{ip} - {user} [{stamp}] "{rng.choice(_METHODS)} {path} HTTP/1.1" '
        f'{rng.choice(_STATUSES)} {rng.randint(0, 50_000)} "{referer}" "{rng.choice(_AGENTS)}"'
    ).encode()


def access_lines(
    count: int, *, seed: int | None = None, end: datetime | None = None
) -> Iterator[bytes]:
    """``count`` well-formed lines with times spread over the hour before ``end``."""
    rng = random.Random(seed)
    end = end or datetime.now(timezone.utc)
    start = end - timedelta(hours=1)
    step = 3600 / max(1, count)
    for i in range(count):
        yield access_line(rng, start + timedelta(seconds=i * step))


@dataclass(frozen=True)
class SampleWrite:
    lines: int
    """Lines written (well-formed and malformed)."""
    malformed: int
    rotated: str | None
    """How the folder's ``access.log`` was rotated during the write (``rename``,
    ``copytruncate``) and to which file."""


def append_sample_access_logs(
    folder: Path, *, lines: int, malformed: int = 0, seed: int | None = None
) -> SampleWrite:
    """Append sample traffic to ``folder/access.log``, rotating it halfway.

    Rotations alternate between a rename (``access.log`` -> ``access.log.K``, a new
    ``access.log``) and a copytruncate (copy to ``access.log.K``, truncate ``access.log``), so a
    pipeline reading ``access.log*`` sees both kinds. Malformed lines are spread through.
    """
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    good = list(access_lines(lines - malformed, seed=rng.randint(0, 1 << 30)))
    bad = [MALFORMED_SAMPLES[i % len(MALFORMED_SAMPLES)] for i in range(malformed)]
    for line in bad:
        good.insert(rng.randint(0, len(good)), line)
    half = len(good) // 2
    live = folder / "access.log"
    _append(live, good[:half])
    rotated = _rotate(folder) if live.exists() else None
    _append(live, good[half:])
    return SampleWrite(len(good), malformed, rotated)


def _append(path: Path, lines: list[bytes]) -> None:
    with open(path, "ab") as handle:
        handle.write(b"".join(line + b"\n" for line in lines))


def _rotate(folder: Path) -> str:
    existing = [int(p.suffix[1:]) for p in folder.glob("access.log.*") if p.suffix[1:].isdigit()]
    number = max(existing, default=0) + 1
    live = folder / "access.log"
    target = folder / f"access.log.{number}"
    if number % 2:
        os.rename(live, target)
        return f"rename to {target.name}"
    shutil.copyfile(live, target)
    with open(live, "r+b") as handle:
        handle.truncate(0)
    return f"copytruncate to {target.name}"
