"""File names as any byte string: stored losslessly, restored, shown escaped."""

from __future__ import annotations

import os
import random

import pytest

from pipeline_core._file_names import ESCAPED_PREFIX, restored_path, shown_path, stored_path

NAMES = [
    b"/var/log/nginx/access.log",
    b"/var/log/caf\xc3\xa9/\xe6\x97\xa5\xe5\xbf\x97.log",
    b"/var/log/bad\xff.log",
    b"/var/log/access.log.bad\xff",
    b"/var/log/\xc3(\x80\xed\xa0\x80.log",  # broken sequences, an encoded surrogate
    b"/var/log/new\nline\r\x1b[31m\x7f.log",
    b"/var/log/back\\slash\\xff.log",  # valid: a backslash, then the letters x f f
    b"/var/log/\xc2\x85\xe2\x80\xa8\xe2\x80\xae\xef\xbb\xbf.log",  # NEL, LS, RLO, BOM
    b"escaped:relative.log",
    b"relative \xff.log",
]


@pytest.mark.parametrize("name", NAMES, ids=repr)
def test_should_store_any_name_as_utf8_text_that_restores_it(name: bytes) -> None:
    path = os.fsdecode(name)

    stored = stored_path(path)

    stored.encode("utf-8")  # no surrogate: any database or JSON reader takes it
    assert "\x00" not in stored
    assert restored_path(stored) == path
    assert stored_path(name) == stored


@pytest.mark.parametrize(
    "name", [b"/var/log/nginx/access.log", b"/var/log/caf\xc3\xa9.log", b"/var/log/a\nb.log"]
)
def test_should_store_a_valid_utf8_name_exactly_as_before(name: bytes) -> None:
    assert stored_path(os.fsdecode(name)) == name.decode()
    assert restored_path(name.decode()) == os.fsdecode(name)


def test_should_mark_a_stored_name_that_is_not_utf8_so_no_path_reads_as_it() -> None:
    stored = stored_path(os.fsdecode(b"/var/log/bad\xff.log"))

    assert stored == ESCAPED_PREFIX + "/var/log/bad\\xff.log"
    assert not stored.startswith("/")
    assert stored_path("escaped:relative.log") == "escaped:escaped:relative.log"


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (b"/var/log/access.log", "/var/log/access.log"),
        (b"/var/log/caf\xc3\xa9.log", "/var/log/caf\xe9.log"),
        (b"/var/log/bad\xff.log", "/var/log/bad\\xff.log"),
        (b"/var/log/back\\slash", "/var/log/back\\\\slash"),
        (b"/l/new\nline\r\t\x1b[2J\x7f", "/l/new\\x0aline\\x0d\\x09\\x1b[2J\\x7f"),
        (b"\xc2\x85|\xe2\x80\xa8|\xe2\x80\xae", "\\u0085|\\u2028|\\u202e"),  # NEL, LS, RLO
        (b"tag \xf3\xa0\x80\x81", "tag \\U000e0001"),
    ],
)  # fmt: skip
def test_should_show_undecodable_bytes_and_control_characters_escaped(
    name: bytes, shown: str
) -> None:
    assert shown_path(os.fsdecode(name)) == shown
    assert shown_path(name) == shown
    assert shown.isprintable()


def test_should_restore_every_byte_string_and_show_it_on_one_printable_line() -> None:
    chosen = random.Random(30)
    alphabet = b"/\\xuU0aF.\n\x1b\x7f\x80\x85\xa9\xc2\xc3\xe2\xed\xff"
    for _ in range(5000):
        name = bytes(chosen.choice(alphabet) for _ in range(chosen.randrange(1, 16)))
        path = os.fsdecode(name)
        shown = shown_path(path)
        assert restored_path(stored_path(path)) == path, name
        assert shown.isprintable(), name
        assert restored_path(ESCAPED_PREFIX + shown) == path, name  # the shown form is exact


def test_should_read_a_value_still_in_memory_form_or_with_a_stray_backslash_as_it_is() -> None:
    assert restored_path("/var/log/bad\udcff.log") == "/var/log/bad\udcff.log"
    assert restored_path("escaped:/a\\q\\x4") == "/a\\q\\x4"
    assert restored_path("escaped:/a\\U99999999") == "/a\\U99999999"
