"""Which filesystems a folder's file events cannot be trusted on.

inotify reports what the kernel it runs in does to a folder. On a network or FUSE filesystem
(NFS, SMB/CIFS, sshfs, s3fs, gcsfuse, 9p, CephFS...) the files are also written by other
machines, or by a daemon outside the kernel's view, and those writes raise no event: a pipeline
reading there must poll. :func:`remote_filesystem` tells them apart by the filesystem's magic
number (``statfs(2)``'s ``f_type``), as ``tail -F`` does before it chooses inotify.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["filesystem_magic", "remote_filesystem"]

REMOTE_FILESYSTEMS = {
    0x6969: "nfs",
    0x517B: "smb",
    0xFF534D42: "cifs",
    0xFE534D42: "smb2",
    0x65735546: "fuse",
    0x01021997: "9p",
    0x00C36400: "ceph",
    0x5346414F: "afs",
    0x6B414653: "afs",
    0x73757245: "coda",
    0x564C: "ncp",
    0x0BD00BD0: "lustre",
    0x47504653: "gpfs",
    0x01161970: "gfs2",
    0x7461636F: "ocfs2",
    0x786F4256: "vboxsf",
}
"""``f_type`` (``linux/magic.h``, and the filesystems' own headers) -> a name for the log, of
the filesystems whose files change without the local kernel's knowledge."""


class _StatFs(ctypes.Structure):
    """``struct statfs``: its first field, ``f_type``, is a ``long`` (``__fsword_t``); the
    rest (at most 120 bytes on the 64-bit ABIs) is room."""

    _fields_ = [("f_type", ctypes.c_long), ("_rest", ctypes.c_byte * 256)]


_libc: ctypes.CDLL | None = None


def filesystem_magic(path: str) -> int | None:
    """The magic number of the filesystem ``path`` is on, or None where it cannot be known
    (not Linux, no such path)."""
    global _libc
    if not sys.platform.startswith("linux"):
        return None
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    info = _StatFs()
    if _libc.statfs(os.fsencode(path), ctypes.byref(info)) != 0:
        return None
    return int(info.f_type) & 0xFFFFFFFF


def remote_filesystem(path: str) -> str | None:
    """The name of the network or FUSE filesystem ``path`` is on, whose files can change
    without an event; None for a local one (or one that cannot be told)."""
    magic = filesystem_magic(path)
    return None if magic is None else REMOTE_FILESYSTEMS.get(magic)
