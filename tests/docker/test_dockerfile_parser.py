"""The Dockerfile and ``.dockerignore`` readers the static checks rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docker.dockerfile import DockerfileError, DockerIgnore, parse_dockerfile


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return path


def test_directives_comments_and_continuations(tmp_path: Path) -> None:
    dockerfile = parse_dockerfile(
        write(
            tmp_path,
            "# syntax=docker/dockerfile:1\n"
            "# a comment, not a directive\n"
            "FROM python:3.11-slim AS base\n"
            "\n"
            "RUN apt-get update \\\n"
            "    # a comment inside the continuation is dropped\n"
            "    && apt-get install -y curl\n"
            'ENTRYPOINT ["sluice", "collect"]\n'
            "CMD echo hello\n",
        )
    )
    assert dockerfile.directives == {"syntax": "docker/dockerfile:1"}
    assert [(i.keyword, i.line) for i in dockerfile.instructions] == [
        ("FROM", 3),
        ("RUN", 5),
        ("ENTRYPOINT", 8),
        ("CMD", 9),
    ]
    assert dockerfile.base_images == ["python:3.11-slim"]
    run = dockerfile.all("RUN")[0]
    assert run.value == "apt-get update && apt-get install -y curl"
    assert dockerfile.all("ENTRYPOINT")[0].exec_form == ("sluice", "collect")
    assert dockerfile.all("CMD")[0].exec_form is None


def test_copy_flags_sources_and_destination(tmp_path: Path) -> None:
    [copy] = parse_dockerfile(
        write(tmp_path, "COPY --chown=airflow:0 --chmod=0755 a.txt 'b c.txt' /opt/x/\n")
    ).instructions
    assert copy.flags == {"chown": "airflow:0", "chmod": "0755"}
    assert copy.sources == ("a.txt", "b c.txt")
    assert copy.destination == "/opt/x/"
    [json_copy] = parse_dockerfile(write(tmp_path, 'COPY ["a b", "/dst"]\n')).instructions
    assert json_copy.sources == ("a b",) and json_copy.destination == "/dst"


def test_escape_directive(tmp_path: Path) -> None:
    [run] = parse_dockerfile(write(tmp_path, "# escape=`\nRUN echo a `\n    b\n")).instructions
    assert run.value == "echo a b"


@pytest.mark.parametrize(
    "text",
    [
        "FORM python:3.11\n",
        "RUN echo a \\\n",
        "COPY only-one\n",
        "RUN <<EOF\necho\nEOF\n",
    ],
)
def test_rejects_what_it_cannot_read(tmp_path: Path, text: str) -> None:
    with pytest.raises(DockerfileError):
        parse_dockerfile(write(tmp_path, text))


def test_dockerignore_allow_list() -> None:
    ignore = DockerIgnore(
        ["# only what the image copies", "*", "!pipeline_core/", "!docker/x.sh", "**/*.pyc"]
    )
    assert not ignore.excludes("pipeline_core")
    assert not ignore.excludes("pipeline_core/collector/_service.py")
    assert ignore.excludes("pipeline_core/collector/_service.pyc")
    assert not ignore.excludes("./docker/x.sh")
    assert ignore.excludes("docker/airflow.Dockerfile")
    assert ignore.excludes(".venv/bin/python")
    assert ignore.excludes("data")


def test_dockerignore_deny_list_and_double_star() -> None:
    ignore = DockerIgnore([".venv", "data/", "**/__pycache__", "docs/*.md", "!docs/keep.md"])
    assert ignore.excludes(".venv/lib/site.py")
    assert ignore.excludes("data/lake/x.parquet")
    assert ignore.excludes("a/b/__pycache__/c.pyc")
    assert ignore.excludes("docs/deployment.md")
    assert not ignore.excludes("docs/keep.md")
    assert not ignore.excludes("docs/sub/deployment.md")  # * stays within one path element
    assert not ignore.excludes("pipeline_core/cli.py")


def test_dockerignore_per_dockerfile_file_wins(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    dockerfile = tmp_path / "docker" / "app.Dockerfile"
    dockerfile.write_text("FROM scratch\n")
    (tmp_path / ".dockerignore").write_text("src\n")
    assert DockerIgnore.for_build(tmp_path, dockerfile).excludes("src/a.py")
    (tmp_path / "docker" / "app.Dockerfile.dockerignore").write_text("*\n!src\n")
    assert not DockerIgnore.for_build(tmp_path, dockerfile).excludes("src/a.py")
    assert DockerIgnore.for_build(tmp_path, dockerfile).excludes("other")
