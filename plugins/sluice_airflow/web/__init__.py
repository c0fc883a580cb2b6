"""Sluice's page and JSON API inside Airflow's api-server, behind Airflow's authentication.

Layout::

    app.py        create_app(): GET /  (HTML page), GET /api/pipelines, GET /api/pipelines/{name}
    auth.py       who may see what: Airflow's user (JWT cookie or bearer token), DAG permissions
    dag_runs.py   the DAG run of each checkpoint, read from Airflow's metadata database
    templates/    the server-rendered page

The plugin mounts :data:`web_app` under :data:`URL_PREFIX`; the page is ``<airflow>/sluice/``.
Every Airflow process imports the plugin module (task processes for its macros, the scheduler
for its listener), but only the api-server serves requests, so :class:`LazyWebApp` imports the
FastAPI app, and with it Airflow's API security module, on the first request only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

URL_PREFIX = "/sluice"
"""Where the api-server mounts the app."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class LazyWebApp:
    """An ASGI app that builds the real one (:func:`sluice_airflow.web.app.create_app`) on its
    first call and hands every call to it."""

    def __init__(self) -> None:
        self._app: FastAPI | None = None

    @property
    def app(self) -> FastAPI:
        """The FastAPI app (built now if it was not yet)."""
        if self._app is None:
            from sluice_airflow.web.app import create_app

            self._app = create_app()
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


web_app = LazyWebApp()
"""The app the plugin registers."""

__all__ = ["URL_PREFIX", "LazyWebApp", "web_app"]
