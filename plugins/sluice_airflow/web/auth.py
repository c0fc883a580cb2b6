"""Who may see what: Airflow's own authentication and DAG permissions for the Sluice app.

The api-server mounts a plugin's FastAPI app with ``app.mount()``; a mounted app inherits none
of the dependencies that authenticate Airflow's own API, so every route here declares
:data:`CurrentUser` (Airflow's ``GetUserDep``): the caller is the user of the JWT in the
``Authorization: Bearer`` header or in the ``_token`` cookie that Airflow's login page sets.
No credential answers 401 (a browser asking for HTML is sent to Airflow's login page instead),
an invalid one 403.

Authorization follows the DAGs: a pipeline is visible to whoever may read the DAG runs of its
DAG ``sluice_<name>``, as the auth manager decides (``is_authorized_dag`` with
``DagAccessEntity.RUN``): the page shows what those runs did to the pipeline's files.
"""

from __future__ import annotations

from typing import Annotated

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.core_api.security import get_user
from airflow.configuration import conf
from fastapi import Depends, HTTPException, Request, status
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

CurrentUser = Annotated[BaseUser, Depends(get_user)]
"""The authenticated Airflow user of the request (401 without credentials, 403 if invalid)."""


def may_read_pipeline(user: BaseUser, dag_id: str) -> bool:
    """Whether ``user`` may read the DAG runs of ``dag_id`` (a pipeline's DAG)."""
    team_name = None
    if conf.getboolean("core", "multi_team", fallback=False):
        from airflow.models.dag import DagModel

        team_name = DagModel.get_team_name(dag_id)
    return get_auth_manager().is_authorized_dag(
        method="GET",
        access_entity=DagAccessEntity.RUN,
        details=DagDetails(id=dag_id, team_name=team_name),
        user=user,
    )


def require_pipeline_access(user: BaseUser, dag_id: str) -> None:
    """Raise 403 unless ``user`` may read the pipeline of DAG ``dag_id``."""
    if not may_read_pipeline(user, dag_id):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"Forbidden: no access to {dag_id}")


async def login_redirect(request: Request, exc: Exception) -> Response:
    """Exception handler: send a browser without a session to Airflow's login page (and back
    here after it); every other HTTP error is answered as FastAPI does."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == status.HTTP_401_UNAUTHORIZED and _wants_html(request):
        try:
            login = get_auth_manager().get_url_login(next_url=str(request.url))
        except RuntimeError:  # no auth manager in this process: nowhere to send the user
            pass
        else:
            return RedirectResponse(login, status_code=status.HTTP_303_SEE_OTHER)
    return await http_exception_handler(request, exc)


def _wants_html(request: Request) -> bool:
    return request.method == "GET" and "text/html" in request.headers.get("accept", "")
