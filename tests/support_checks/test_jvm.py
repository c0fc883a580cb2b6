"""The tests' JVM options: the class data archive is used once made, and a JVM that cannot use
it says nothing on standard output (where spark-submit's callers read their results)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support import jvm


@pytest.fixture
def no_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("JAVA_TOOL_OPTIONS", raising=False)
    monkeypatch.setattr(jvm, "ARCHIVES", tmp_path / "jvm")
    return tmp_path / "jvm"


def test_jvms_start_quickly_and_with_the_archive_once_it_is_made(no_options: Path) -> None:
    jvm.quick_start_jvms()
    without = os.environ["JAVA_TOOL_OPTIONS"]
    os.environ.pop("JAVA_TOOL_OPTIONS")
    archive = jvm.class_archive()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    jvm.quick_start_jvms()

    assert archive.parent == no_options
    assert without == jvm.QUICK_START_OPTIONS
    assert os.environ["JAVA_TOOL_OPTIONS"] == (
        f"{jvm.QUICK_START_OPTIONS} -XX:SharedArchiveFile={archive} {jvm.QUIET_ARCHIVE}"
    )


def test_a_developers_own_options_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Xmx2g")
    jvm.quick_start_jvms()
    assert os.environ["JAVA_TOOL_OPTIONS"] == "-Xmx2g"


HELLO = 'public class Hello { public static void main(String[] a) { System.out.print("hi"); } }'


@pytest.mark.timeout(120)
def test_a_jvm_that_cannot_use_the_archive_says_nothing_on_standard_output(
    no_options: Path, tmp_path: Path
) -> None:
    (tmp_path / "Hello.java").write_text(HELLO)
    java(tmp_path, "javac", "-d", "classes", "Hello.java")
    java(tmp_path, "jar", "cf", "hello.jar", "-C", "classes", ".")
    archive = jvm.class_archive()
    archive.parent.mkdir(parents=True)
    java(tmp_path, "java", f"-XX:ArchiveClassesAtExit={archive}", "-cp", "hello.jar", "Hello")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "hello.jar").rename(tmp_path / "elsewhere" / "hello.jar")  # another class path
    jvm.quick_start_jvms()
    options = os.environ["JAVA_TOOL_OPTIONS"].split()
    loud = [option for option in options if option != jvm.QUIET_ARCHIVE]

    said = java(tmp_path, "java", *loud, "-cp", "elsewhere/hello.jar", "Hello")
    quiet = java(tmp_path, "java", *options, "-cp", "elsewhere/hello.jar", "Hello")

    assert "Unable to use shared archive" in said  # what the option turns off
    assert quiet == "hi"


def java(folder: Path, tool: str, *args: str) -> str:
    """Run a JDK tool in ``folder`` (no options from the environment); its standard output."""
    env = {name: value for name, value in os.environ.items() if name != "JAVA_TOOL_OPTIONS"}
    done = subprocess.run(
        [tool, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout
