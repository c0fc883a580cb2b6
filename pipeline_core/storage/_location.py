"""A storage location written as a URL (or a plain path), and its Arrow filesystem."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlparse

from pipeline_core._compat import StrEnum
from pipeline_core.errors import LocationError, StorageError

if TYPE_CHECKING:  # imported where a filesystem is opened: a location is parsed without Arrow
    import pyarrow.fs as pafs

S3_ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
"""Where an ``s3://`` location's endpoint comes from when its URL names none (an
S3-compatible server): the service-specific variable first, as the AWS SDKs read them."""

_SECRET_OPTION = re.compile(
    r"(key|secret|token|password|passwd|credential|signature|sas|sig)", re.IGNORECASE
)
"""A URL option whose name holds one of these carries a credential."""


class StorageScheme(StrEnum):
    """The kinds of location Sluice reads and writes, by URL scheme."""

    LOCAL = "file"
    """A local (or mounted) folder: ``file:///path`` or a plain path."""
    S3 = "s3"
    """Amazon S3 or an S3-compatible server (MinIO, Ceph, moto...)."""
    GCS = "gs"
    """Google Cloud Storage."""
    ABFS = "abfs"
    """Azure Data Lake Storage Gen2 / Blob storage (``abfs://`` or ``abfss://``)."""

    @classmethod
    def of(cls, scheme: str) -> StorageScheme:
        """The scheme a URL's ``scheme`` names (``abfss`` is ``ABFS``, ``gcs`` is ``GCS``).

        Raises:
            LocationError: Sluice does not read or write that scheme.
        """
        aliases = {"": cls.LOCAL, "abfss": cls.ABFS, "gcs": cls.GCS, "s3a": cls.S3}
        scheme = scheme.lower()
        if scheme in aliases:
            return aliases[scheme]
        try:
            return cls(scheme)
        except ValueError:
            known = ", ".join(f"{s.value}://" for s in cls)
            raise LocationError(f"unsupported scheme {scheme}:// (use {known} or a path)") from None


@dataclass(frozen=True)
class StorageLocation:
    """A folder on local disk or in an object store, as a URL holding no credential.

    ``url`` is what was written (a plain path is kept as a path); ``scheme`` says which store.
    Credentials never come from the URL: an object store's come from the environment and the
    store's standard chain (for S3: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, the
    shared credentials file, the instance's role; for GCS: Application Default Credentials;
    for Azure: ``AZURE_STORAGE_ACCOUNT_KEY`` or the default credential chain).
    """

    url: str
    scheme: StorageScheme

    @classmethod
    def parse(cls, text: str | Path) -> StorageLocation:
        """The location ``text`` names: a URL of a :class:`StorageScheme`, or a path.

        Raises:
            LocationError: the scheme is not supported, the URL names no bucket, or it holds a
                credential (a password, or an option such as ``secret_key``): the message
                names what to remove, never its value.
        """
        text = str(text)
        if "://" not in text:
            return cls(text, StorageScheme.LOCAL)
        parsed = urlparse(text)
        scheme = StorageScheme.of(parsed.scheme)
        if parsed.password is not None:
            raise LocationError(
                "the URL holds a password (user:password@): credentials come from the "
                "environment or the store's credential chain, never from the pipeline file"
            )
        secret = sorted({k for k, _ in parse_qsl(parsed.query) if _SECRET_OPTION.search(k)})
        if secret:
            raise LocationError(
                f"the URL holds the credential option {', '.join(secret)}: credentials come "
                "from the environment or the store's credential chain, never from the "
                "pipeline file"
            )
        if scheme is not StorageScheme.LOCAL and not parsed.netloc:
            raise LocationError(f"{scheme.value}:// location names no bucket or container")
        return cls(text, scheme)

    @property
    def is_local(self) -> bool:
        return self.scheme is StorageScheme.LOCAL

    @property
    def local_path(self) -> Path:
        """The folder of a local location (a ``file://`` URL's path, not %-decoded).

        Raises:
            LocationError: the location is in an object store.
        """
        if not self.is_local:
            raise LocationError(f"{self.redacted} is not a local folder")
        return Path(urlparse(self.url).path if "://" in self.url else self.url)

    @property
    def redacted(self) -> str:
        """The URL without its query (options may be long; none is secret)."""
        return self.url.split("?", 1)[0]

    def child(self, *names: str) -> StorageLocation:
        """The location of ``names`` below this one (a sub-folder or an object)."""
        if "://" not in self.url:
            return StorageLocation(str(Path(self.url, *names)), self.scheme)
        base, _, query = self.url.partition("?")
        joined = "/".join([base.rstrip("/"), *names])
        return StorageLocation(f"{joined}?{query}" if query else joined, self.scheme)

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """The Arrow filesystem of the location and the location's path in it (no trailing
        ``/``). Nothing is reached yet: a store that cannot be reached fails at the first
        operation, with an ``OSError``.

        Raises:
            StorageError: the filesystem cannot be built (a malformed option, a store's
                library missing from this pyarrow).
        """
        if self.is_local:
            import pyarrow.fs as pafs

            return pafs.LocalFileSystem(), str(self.local_path)
        return location_filesystem(self.url)

    def __str__(self) -> str:
        return self.redacted


def location_filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem of a location (a URL or a path) and the location's path in it.

    A ``file`` location is a path as it is written, as pyiceberg and Spark read it: never
    %-decoded (``FileSystem.from_uri`` decodes, and would name another folder). An ``s3``
    location without an ``endpoint_override`` option takes its endpoint from
    ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` when one is set.

    Raises:
        StorageError: the filesystem cannot be built.
    """
    import pyarrow.fs as pafs

    parsed = urlparse(location)
    if (parsed.scheme or "file") == "file":
        return pafs.LocalFileSystem(), parsed.path
    uri = location
    if StorageScheme.of(parsed.scheme) is StorageScheme.S3:
        uri = _with_s3_endpoint("s3" + location[len(parsed.scheme) :])
    try:
        filesystem, path = pafs.FileSystem.from_uri(uri)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise StorageError(f"cannot open {location.split('?', 1)[0]}: {exc}") from exc
    return filesystem, str(path).rstrip("/")


def _with_s3_endpoint(location: str) -> str:
    """``location`` with ``endpoint_override`` from the environment, unless it has one."""
    base, _, query = location.partition("?")
    options = dict(parse_qsl(query))
    if "endpoint_override" not in options:
        endpoint = next((os.environ[n] for n in S3_ENDPOINT_ENV if os.environ.get(n)), None)
        if endpoint is not None:
            options["endpoint_override"] = endpoint
    return f"{base}?{urlencode(options)}" if options else base
