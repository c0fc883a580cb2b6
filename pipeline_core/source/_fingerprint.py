"""File identity: device and inode, confirmed by a CRC-32 signature of the first bytes."""

from __future__ import annotations

import hashlib
import os
import time
import zlib
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Signature:
    """CRC-32 of a file's first ``size`` bytes."""

    size: int
    crc: int


def read_signature(fd: int, max_bytes: int) -> Signature:
    """The signature of the first ``max_bytes`` bytes (fewer if the file is shorter)."""
    head = os.pread(fd, max_bytes, 0)
    return Signature(len(head), zlib.crc32(head))


def signature_matches(fd: int, expected: Signature) -> bool:
    """True when the file still starts with the bytes ``expected`` was taken from."""
    if expected.size == 0:
        return True
    head = os.pread(fd, expected.size, 0)
    return len(head) == expected.size and zlib.crc32(head) == expected.crc


def new_fingerprint(host: str, dev: int, ino: int, signature: Signature) -> str:
    """A fresh, stable 16-hex-digit name for a file first seen now.

    Assigned once and stored; never recomputed from the file (its first bytes may still grow).
    """
    material = f"{host}|{dev}|{ino}|{signature.size}|{signature.crc}|{time.time_ns()}"
    return hashlib.blake2b(material.encode(), digest_size=8).hexdigest()
