"""Conversions every part of the metastore shares: times in UTC, URLs fit to show."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa

from pipeline_core._wall_clock import utc_now

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    R = TypeVar("R", bound=DataclassInstance)


def utcnow() -> datetime:
    """This host's clock (``pipeline_core._wall_clock``), in UTC."""
    return utc_now()


def database_now(connection: sa.Connection) -> datetime:
    """The database server's clock, in UTC: what every host's leases are measured by, so that
    a host whose clock is off, or stepped back, neither lets its lease lapse for the others
    nor keeps a lapsed one (PostgreSQL: the transaction's ``now()``; SQLite, whose database
    is on this host: this host's clock, read by SQLite)."""
    if connection.dialect.name == "postgresql":
        return as_utc(connection.execute(sa.text("SELECT now()")).scalar_one())
    if connection.dialect.name == "sqlite":
        text = connection.execute(
            sa.text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")
        ).scalar_one()
        return as_utc(datetime.fromisoformat(str(text)))
    return utcnow()


def as_utc(value: datetime) -> datetime:
    """``value`` as a plain ``datetime`` in UTC, as the metastore stores times.

    A naive value is taken to be UTC already (SQLite returns naive datetimes); an aware one
    is converted (PostgreSQL returns the session's time zone; Airflow hands over pendulum
    datetimes, made plain here).
    """
    utc = value.astimezone(timezone.utc) if value.tzinfo is not None else value
    return datetime(
        utc.year,
        utc.month,
        utc.day,
        utc.hour,
        utc.minute,
        utc.second,
        utc.microsecond,
        timezone.utc,
    )


def maybe_utc(value: datetime | None) -> datetime | None:
    """:func:`as_utc` of a time that may be missing."""
    return None if value is None else as_utc(value)


def record_of_row(kind: type[R], row: Any, **stored_otherwise: Any) -> R:
    """A record (a dataclass) from a row whose columns are named like its fields;
    ``stored_otherwise`` gives the fields whose column differs (JSON text, an enum's value, a
    column of another name)."""
    names = [f.name for f in dataclasses.fields(kind) if f.name not in stored_otherwise]
    return kind(**{name: getattr(row, name) for name in names}, **stored_otherwise)


def row_of_record(
    record: DataclassInstance, *, without: Iterable[str] = (), **columns: Any
) -> dict[str, Any]:
    """The column values that store ``record``: its fields by name, but those ``without`` (not
    stored in its table), then ``columns`` (added, or stored otherwise)."""
    left_out = set(without) | columns.keys()
    fields = [f.name for f in dataclasses.fields(record) if f.name not in left_out]
    return {**{name: getattr(record, name) for name in fields}, **columns}


def redacted_url(url: str) -> str:
    """A database URL fit for messages and pages: its password hidden, and the value of every
    option named like a secret (``?password=``, ``sslpassword``...)."""
    from pipeline_core.config._secrets import mask_url_passwords

    try:
        return mask_url_passwords(sa.make_url(url).render_as_string(hide_password=True))
    except Exception:
        return "<unparseable URL>"
