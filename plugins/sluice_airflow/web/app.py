"""The Sluice FastAPI app: one HTML page and a small JSON API over ``pipeline_core.state``.

Routes (relative to the mount point, ``/sluice`` in the api-server):

* ``GET /`` -- the page: per pipeline, charts of what its collectors read and left unread
  over time and of its checkpoints' latencies, lines and rejects
  (:mod:`sluice_airflow.web.pipeline_charts`), files with their unread bytes, checkpoints with
  their DAG runs and batches, sink groups with penalties, collector leases.
* ``GET /api/pipelines`` -- a :class:`~pipeline_core.state.PipelineSummary` per pipeline.
* ``GET /api/pipelines/{name}`` -- the :class:`~pipeline_core.state.PipelineSnapshot` of one,
  with the series the charts draw: ``read_progress`` samples, and each checkpoint's
  ``seal_latency_s``, ``commit_latency_s``, ``lines`` and ``landing_rejects``.

``limit`` picks how many of the newest checkpoints, ``hours`` how many hours of read progress.

Every route needs an authenticated Airflow user (see :mod:`sluice_airflow.web.auth`) and
shows only the pipelines whose DAG runs that user may read: a pipeline the user may not see
answers the same 403 whether or not it exists (the permission is decided on the name alone,
before the pipeline is looked for), so names cannot be found by trying them; a user who may
see it is told 404 when there is none. There is no other route: no OpenAPI schema, no
``/docs`` or ``/redoc`` page (FastAPI's would be served without authentication and load their
scripts from a CDN into Airflow's origin). Handlers are plain functions: FastAPI runs them in
its thread pool, so the database reads never block the event loop.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated
from urllib.parse import quote

from fastapi import FastAPI, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException as StarletteHTTPException

from pipeline_core.state import (
    DAG_ID_PREFIX,
    PipelineSnapshot,
    PipelineSummary,
    find_pipeline,
    pipeline_configs,
    pipeline_name,
    take_snapshot,
)
from sluice_airflow.web.auth import (
    CurrentUser,
    login_redirect,
    may_read_pipeline,
    require_pipeline_access,
)
from sluice_airflow.web.dag_runs import airflow_dag_runs
from sluice_airflow.web.pipeline_charts import pipeline_charts

TEMPLATES = Path(__file__).parent / "templates"
DEFAULT_CHECKPOINTS = 20
DEFAULT_HOURS = 24.0
WINDOWS = (1, 6, 24, 168)
"""The read progress windows the page links to, in hours (the samples are kept 7 days)."""
Limit = Annotated[int, Query(ge=1, le=500, description="How many of the newest checkpoints")]
Hours = Annotated[float, Query(gt=0, le=168, description="How many hours of read progress samples")]


def create_app() -> FastAPI:
    """A new Sluice app (the plugin mounts one under ``/sluice``)."""
    app = FastAPI(
        title="Sluice",
        description="State of the Sluice pipelines: files, checkpoints, sinks, leases.",
        version="1",
        # Every route needs a user: none for the schema and the pages FastAPI adds by default.
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.add_exception_handler(StarletteHTTPException, login_redirect)
    templates = Jinja2Templates(directory=TEMPLATES)
    templates.env.filters.update(
        {
            "bytes": human_bytes,
            "when": when,
            "hours": hours_label,
            "quote": lambda value: quote(str(value), safe=""),
        }
    )

    @app.get("/api/pipelines", response_model=list[PipelineSummary])
    def list_pipelines(user: CurrentUser) -> list[PipelineSummary]:
        """A summary of every pipeline the user may see, by name."""
        snapshots = _snapshots(user, limit=1, with_runs=False, hours=0)  # no series in a summary
        return [PipelineSummary.of(s) for s in snapshots]

    @app.get("/api/pipelines/{name}", response_model=PipelineSnapshot)
    def pipeline(
        name: str,
        user: CurrentUser,
        limit: Limit = DEFAULT_CHECKPOINTS,
        hours: Hours = DEFAULT_HOURS,
    ) -> PipelineSnapshot:
        """The snapshot of pipeline ``name`` (403 when not allowed, whether or not there is
        one; 404 when there is none)."""
        require_pipeline_access(user, DAG_ID_PREFIX + name)  # before looking: no existence leak
        config = find_pipeline(name)
        if config is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"there is no pipeline {name!r}")
        return take_snapshot(
            config,
            limit=limit,
            dag_runs=airflow_dag_runs,
            progress_window=timedelta(hours=hours),
        )

    @app.get("/", response_class=HTMLResponse)
    def page(
        request: Request,
        user: CurrentUser,
        limit: Limit = DEFAULT_CHECKPOINTS,
        hours: Hours = DEFAULT_HOURS,
    ) -> HTMLResponse:
        """The Sluice page."""
        snapshots = _snapshots(user, limit=limit, with_runs=True, hours=hours)
        context = {
            "pipelines": snapshots,
            "charts": {s.name: pipeline_charts(s) for s in snapshots},
            "user": user.get_name(),
            "limit": limit,
            "hours": hours,
            "windows": WINDOWS,
        }
        return templates.TemplateResponse(
            request, "index.html", context, headers={"Cache-Control": "no-store"}
        )

    return app


def _snapshots(
    user: CurrentUser, *, limit: int, with_runs: bool, hours: float
) -> list[PipelineSnapshot]:
    """Snapshots of the pipelines ``user`` may see."""
    return [
        take_snapshot(
            path,
            limit=limit,
            dag_runs=airflow_dag_runs if with_runs else None,
            progress_window=timedelta(hours=hours),
        )
        for path in pipeline_configs()
        if may_read_pipeline(user, DAG_ID_PREFIX + pipeline_name(path))
    ]


def human_bytes(count: int | None) -> str:
    """``1536`` -> ``"1.5 KiB"``; ``None`` -> ``"unknown"``."""
    if count is None:
        return "unknown"
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def when(moment: datetime | None) -> str:
    """A UTC time to the second, or an em dash."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "\u2014"


def hours_label(hours: float) -> str:
    """A read progress window for people: ``24`` -> ``"24 h"``, ``168`` -> ``"7 d"``."""
    if hours >= 48 and hours % 24 == 0:
        return f"{hours / 24:g} d"
    return f"{hours:g} h"
