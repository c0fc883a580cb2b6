"""Static checks of ``docker/docker-compose.yaml``: no Docker engine runs here, so what can be
checked without one is: the file parses; every build context, Dockerfile, ``COPY`` source,
bind-mounted path and env file exists (and is not left out of the build context by a
``.dockerignore``); every image is pinned; and the services agree with each other (the Spark
master the ``spark_default`` connection names, the API server the tasks call, the database the
metastore URL names, the volumes that must be shared, the pipeline file they all read)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa
import yaml

from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.storage import StorageScheme
from tests.docker.dockerfile import DockerIgnore, parse_dockerfile
from tests.support.airflow_env import REPO_ROOT

DOCKER = REPO_ROOT / "docker"
COMPOSE_FILE = DOCKER / "docker-compose.yaml"
AIRFLOW_SERVICES = (
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
)
OBJECT_STORE = "object-store"
STORE_USERS = ("collector", "airflow-init", *AIRFLOW_SERVICES, "spark-worker", "spark-connect")
"""Every service that writes or reads the staging (or validates it)."""
STORE_VARIABLES = (
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def interpolate(value: str) -> str:
    """``${NAME:-default}`` -> ``default`` (what compose uses with nothing set)."""
    return _VARIABLE.sub(lambda m: m.group(2) or "", value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(document, dict)
    return document


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose["services"]
    return found


def builds(services: dict[str, dict[str, Any]]) -> Iterator[tuple[str, Path, Path]]:
    """``(service, context, dockerfile)`` of every service built from a Dockerfile."""
    for name, service in services.items():
        build = service.get("build")
        if build is None:
            continue
        context = (DOCKER / build["context"]).resolve()
        yield name, context, context / build.get("dockerfile", "Dockerfile")


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's ``environment`` plus its env files (the files first, as compose does)."""
    values: dict[str, str] = {}
    for entry in env_files(service):
        for line in entry.read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                key, _, value = line.partition("=")
                values[key.strip()] = value.strip()
    declared = service.get("environment") or {}
    if isinstance(declared, list):
        declared = dict(item.split("=", 1) for item in declared)
    values.update({key: interpolate(str(value)) for key, value in declared.items()})
    return values


def env_files(service: dict[str, Any]) -> list[Path]:
    entries = service.get("env_file") or []
    if isinstance(entries, str):
        entries = [entries]
    return [DOCKER / (entry if isinstance(entry, str) else entry["path"]) for entry in entries]


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> source (a named volume, or a host path) of a service's volumes."""
    found: dict[str, str] = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            found[volume["target"]] = volume["source"]
        else:
            source, target, *_ = interpolate(volume).split(":")
            found[target] = source
    return found


def is_pinned(image: str) -> bool:
    """A tag other than ``latest``, or a digest."""
    if "@sha256:" in image:
        return True
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag not in ("", "latest")


def test_the_file_parses_with_the_stack_it_promises(services: dict[str, dict[str, Any]]) -> None:
    expected = {
        "postgres",
        "airflow-init",
        *AIRFLOW_SERVICES,
        "spark-master",
        "spark-worker",
        "collector",
        "object-store",
    }
    assert expected <= set(services)
    commands = {name: services[name].get("command") for name in AIRFLOW_SERVICES}
    assert commands == {
        "airflow-apiserver": "api-server",
        "airflow-scheduler": "scheduler",
        "airflow-dag-processor": "dag-processor",
        "airflow-triggerer": "triggerer",
    }
    for name in ("airflow-init", *AIRFLOW_SERVICES):
        assert environment(services[name])["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    init = " ".join(services["airflow-init"]["command"])
    assert "airflow db migrate" in init


def test_every_image_is_pinned(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        if "image" in service:
            assert is_pinned(service["image"]), f"{name}: {service['image']} is not pinned"
    for _, _, dockerfile in builds(services):
        for image in parse_dockerfile(dockerfile).base_images:
            assert is_pinned(image), f"{dockerfile.name}: FROM {image} is not pinned"


def test_images_built_from_one_dockerfile_share_one_tag(
    services: dict[str, dict[str, Any]],
) -> None:
    tags: dict[Path, set[str]] = {}
    for name, _, dockerfile in builds(services):
        tags.setdefault(dockerfile, set()).add(services[name]["image"])
    assert all(len(names) == 1 for names in tags.values()), tags
    assert len({next(iter(names)) for names in tags.values()}) == len(tags)


def test_build_contexts_dockerfiles_and_copy_sources_exist(
    services: dict[str, dict[str, Any]],
) -> None:
    checked = 0
    for name, context, dockerfile in builds(services):
        assert context.is_dir(), f"{name}: build context {context} does not exist"
        assert dockerfile.is_file(), f"{name}: {dockerfile} does not exist"
        ignore = DockerIgnore.for_build(context, dockerfile)
        for copy in parse_dockerfile(dockerfile).all("COPY") + parse_dockerfile(dockerfile).all(
            "ADD"
        ):
            if "from" in copy.flags:
                continue
            for source in copy.sources:
                assert (context / source).exists(), (
                    f"{dockerfile.name}:{copy.line}: COPY source {source} does not exist"
                )
                assert not ignore.excludes(source), (
                    f"{dockerfile.name}:{copy.line}: {source} is left out of the build "
                    "context by its .dockerignore"
                )
                checked += 1
    assert checked >= 8


def test_the_build_context_leaves_out_the_bulk(services: dict[str, dict[str, Any]]) -> None:
    """.venv (gigabytes of Spark and Airflow), data/ and .git never go to the builder."""
    for _, context, dockerfile in builds(services):
        ignore = DockerIgnore.for_build(context, dockerfile)
        for bulky in (".venv/lib", "data/lake", ".git/objects", "tests/support"):
            assert ignore.excludes(bulky), f"{dockerfile.name} sends {bulky}"


def test_bind_mounts_env_files_and_named_volumes_exist(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    declared = set(compose.get("volumes") or {})
    used: set[str] = set()
    for name, service in services.items():
        for target, source in mounts(service).items():
            assert PurePosixPath(target).is_absolute(), f"{name}: {target}"
            if source.startswith((".", "/")):
                assert (DOCKER / source).exists(), f"{name}: {source} does not exist"
            else:
                assert source in declared, f"{name}: volume {source} is not declared"
                used.add(source)
        for path in env_files(service):
            assert path.is_file(), f"{name}: env file {path} does not exist"
        for dependency in service.get("depends_on") or {}:
            assert dependency in services, f"{name} depends on unknown {dependency}"
    assert used == declared, f"declared but unused volumes: {declared - used}"


def test_entrypoints_the_images_do_not_have_are_copied_in(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, context, dockerfile in builds(services):
        destinations = {copy.destination for copy in parse_dockerfile(dockerfile).all("COPY")}
        entrypoint = services[name].get("entrypoint") or []
        for word in [entrypoint] if isinstance(entrypoint, str) else entrypoint:
            if word.startswith("/opt/sluice/"):
                assert word in destinations, f"{name}: {word} is not copied into the image"
                source = next(
                    copy.sources[0]
                    for copy in parse_dockerfile(dockerfile).all("COPY")
                    if copy.destination == word
                )
                assert (context / source).stat().st_mode & 0o111, f"{source} is not executable"


def test_spark_connection_names_the_master_the_worker_joins(
    services: dict[str, dict[str, Any]],
) -> None:
    connection = json.loads(
        environment(services["airflow-scheduler"])["AIRFLOW_CONN_SPARK_DEFAULT"]
    )
    assert connection["conn_type"] == "spark"
    master_url = f"{connection['host']}:{connection['port']}"
    master = services["spark-master"]
    assert connection["host"] == f"spark://{master['hostname']}"
    assert master["command"] == ["master"]
    assert services["spark-worker"]["command"] == ["worker", master_url]
    # Client mode: the executors connect back to the driver in the scheduler, by its name.
    assert services["airflow-scheduler"]["hostname"] == "airflow-scheduler"
    assert "deploy-mode" not in connection.get("extra", {})


def test_the_commented_spark_connect_connection_reaches_the_warm_server(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    [line] = [line for line in COMPOSE_FILE.read_text().splitlines() if '"spark_connect"' in line]
    value = line.split("AIRFLOW_CONN_SPARK_DEFAULT:", 1)[1].strip().strip("'")
    connect = services["spark-connect"]
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", value)

    url = SparkConnectHook(conn_id="spark_default").get_connection_url()

    port = connect["environment"]["SPARK_CONNECT_PORT"]
    assert url == f"sc://{connect['hostname']}:{port}/"
    assert connect["image"] == services["spark-master"]["image"]
    assert connect["command"] == ["connect"]


def test_tasks_reach_the_api_server_and_databases_exist(
    services: dict[str, dict[str, Any]],
) -> None:
    env = environment(services["airflow-scheduler"])
    api = urlsplit(env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"])
    assert api.hostname == "airflow-apiserver" and api.hostname in services
    assert api.path == "/execution/"
    airflow_db = sa.make_url(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    metastore = sa.make_url(env["SLUICE_METASTORE_URL"])
    assert airflow_db.host == metastore.host == "postgres"
    assert airflow_db.database == services["postgres"]["environment"]["POSTGRES_DB"]
    assert metastore.database != airflow_db.database  # both keep an alembic_version table
    init_sql = "\n".join(
        path.read_text() for path in sorted((DOCKER / "postgres-init").glob("*.sql"))
    )
    assert f"CREATE DATABASE {metastore.database}" in init_sql
    assert environment(services["collector"])["SLUICE_METASTORE_URL"] == str(
        metastore.render_as_string(hide_password=False)
    )


def test_every_sluice_process_sees_the_pipeline_and_shares_no_data_folder(
    services: dict[str, dict[str, Any]],
) -> None:
    """Staging and lake are in the store: the Spark services mount no data volume, and the
    Airflow services' data volume (the spool of a run that collects itself) is theirs alone."""
    configs = pipeline_configs()
    for config in configs:
        assert config.lake_location.scheme is StorageScheme.S3, config.lake_location
    for name in ("spark-worker", "spark-connect"):
        assert "sluice-data" not in mounts(services[name]).values(), name
    assert named_volume_users(services)["sluice-data"] <= {"airflow-init", *AIRFLOW_SERVICES}
    for name in ("collector", *AIRFLOW_SERVICES):
        volumes = mounts(services[name])
        assert volumes.get("/etc/sluice/pipelines") == "./pipelines", name
        assert environment(services[name])["SLUICE_PIPELINES_DIR"] == "/etc/sluice/pipelines"
        for config in configs:
            for source in config.sources:
                for pattern in source.paths:
                    assert any(pattern.startswith(target + "/") for target in volumes), (
                        f"{name} cannot see {pattern}"
                    )
    for path in pipeline_files():
        # A container's hostname changes when it is re-created: the host is set explicitly.
        assert yaml.safe_load(path.read_text())["collector"]["host"], path


def pipeline_files() -> list[Path]:
    found = sorted((DOCKER / "pipelines").glob("*.yaml"))
    assert found
    return found


def pipeline_configs() -> list[PipelineConfig]:
    return [load_pipeline_config(path) for path in pipeline_files()]


def named_volume_users(services: dict[str, dict[str, Any]]) -> dict[str, set[str]]:
    """Named volume -> the services mounting it."""
    users: dict[str, set[str]] = {}
    for name, service in services.items():
        for source in mounts(service).values():
            if not source.startswith((".", "/")):
                users.setdefault(source, set()).add(name)
    return users


def test_staging_and_lake_are_buckets_of_the_object_store(
    services: dict[str, dict[str, Any]],
) -> None:
    store = services[OBJECT_STORE]
    bucket_check = " ".join(store["healthcheck"]["test"])
    script = "\n".join(store["command"])
    created = re.search(r"for bucket in \(([^)]*)\):", script)
    assert created and "create_bucket(Bucket=bucket)" in script
    for config in pipeline_configs():
        for location in (config.staging_location, config.lake_location):
            assert location.scheme is StorageScheme.S3, location
            bucket = urlsplit(location.url).netloc
            # Created by the store's own start-up (every start: the server keeps objects in
            # memory), and healthy only once it exists.
            assert f'"{bucket}"' in created.group(1), bucket
            assert f"/{bucket}'" in bucket_check, bucket
    assert "moto_server -H 0.0.0.0 -p 5000" in script and 'wait "$$server"' in script


def test_the_store_is_the_server_the_tests_run(services: dict[str, dict[str, Any]]) -> None:
    """moto's own image at the version requirements-dev.txt pins for the test suite."""
    pin = re.search(
        r"^moto\[server\]==(\S+)", (REPO_ROOT / "requirements-dev.txt").read_text(), re.MULTILINE
    )
    assert pin, "requirements-dev.txt pins no moto[server]"
    assert services[OBJECT_STORE]["image"] == f"motoserver/moto:{pin.group(1)}"


def test_the_store_endpoint_and_credentials_reach_every_staging_reader_by_environment(
    services: dict[str, dict[str, Any]],
) -> None:
    for name in STORE_USERS:
        env = environment(services[name])
        for variable in STORE_VARIABLES:
            assert env.get(variable), f"{name} lacks {variable}"
        endpoint = urlsplit(env["AWS_ENDPOINT_URL"])
        assert endpoint.hostname == OBJECT_STORE == services[OBJECT_STORE]["hostname"], name
        assert f"-p {endpoint.port}" in "\n".join(services[OBJECT_STORE]["command"])
        # From the env file, never written into the compose file itself.
        declared = services[name].get("environment") or {}
        assert not set(declared) & set(STORE_VARIABLES), name
        assert DOCKER / "object-store.env" in env_files(services[name]), name
    for name in ("collector", "airflow-init", *AIRFLOW_SERVICES):
        assert services[name]["depends_on"][OBJECT_STORE] == {"condition": "service_healthy"}


def test_no_credential_is_in_any_yaml_file(services: dict[str, dict[str, Any]]) -> None:
    """The store's keys live in object-store.env (the containers' environment) only: not in
    the compose file, not in a pipeline file (which names only ``s3://bucket/prefix``)."""
    env = environment(services["collector"])
    secrets = [env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]]
    for path in [COMPOSE_FILE, *pipeline_files()]:
        text = path.read_text()
        for secret in secrets:
            assert secret not in text, f"{path.name} holds a store credential"
        assert "AWS_SECRET_ACCESS_KEY" not in text and "AWS_ACCESS_KEY_ID" not in text, path
    for config in pipeline_configs():
        for location in (config.staging_location, config.lake_location):
            assert "@" not in urlsplit(location.url).netloc
            assert "?" not in location.url


def test_the_collector_shares_no_volume_and_spools_in_its_own(
    services: dict[str, dict[str, Any]],
) -> None:
    """A log host needs the metastore and the store, no shared folder: every volume the
    collector writes is its own; the only other one is the tailed log folder (read-only)."""
    collector = services["collector"]
    users = named_volume_users(services)
    volumes = mounts(collector)
    writable = {
        target
        for target, source in volumes.items()
        if not source.startswith((".", "/"))
        and not any(
            spec == f"{source}:{target}:ro"
            for spec in collector["volumes"]
            if isinstance(spec, str)
        )
    }
    assert writable, "the collector has no volume of its own for its spool"
    for target in writable:
        assert users[volumes[target]] == {"collector"}, f"{volumes[target]} is shared"
    assert users[volumes["/logs"]] - {"collector"}  # the log folder it tails: read-only
    assert "sluice-data" not in volumes.values()
    for config in pipeline_configs():
        assert any(str(config.seal_dir).startswith(target + "/") for target in writable), (
            f"the spool {config.seal_dir} is not on the collector's own volume"
        )
        assert any(str(config.data_dir).startswith(target) for target in writable)


def test_airflow_init_validates_the_pipeline_against_the_store(
    services: dict[str, dict[str, Any]],
) -> None:
    """``sluice validate`` writes and deletes a probe object in the staging bucket: run after
    the schema's migration, before anything else starts."""
    init = services["airflow-init"]["command"][-1]
    upgrade = init.index("python -m pipeline_core db upgrade /etc/sluice/pipelines")
    validate = init.index("python -m pipeline_core validate /etc/sluice/pipelines")
    assert upgrade < validate
    assert "set -euo pipefail" in init
    assert "/data/staging" not in init
    assert DOCKER / "object-store.env" in env_files(services["airflow-init"])


def test_the_collector_has_time_to_seal_on_stop(services: dict[str, dict[str, Any]]) -> None:
    grace = services["collector"]["stop_grace_period"]
    assert grace.endswith("s") and int(grace[:-1]) >= 30
