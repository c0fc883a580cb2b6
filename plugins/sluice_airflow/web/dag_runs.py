"""The Airflow DAG run behind each checkpoint, read from Airflow's metadata database.

A checkpoint records the ``run_id`` of the DAG run that requested it; the run's outcome is
Airflow's own ``dag_run`` row (``dag_id = sluice_<pipeline>``), read here by run id. Airflow's
table is the record of what a run did: it follows clears and re-runs, so it is never copied
into the metastore.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from pipeline_core.state import DagRunSnapshot


def airflow_dag_runs(dag_id: str, run_ids: Sequence[str]) -> dict[str, DagRunSnapshot]:
    """``{run_id: DagRunSnapshot}`` for the runs of ``dag_id`` among ``run_ids`` that exist.

    A :data:`pipeline_core.state.DagRunLookup`; needs Airflow's database (the api-server has).
    """
    if not run_ids:
        return {}
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    query = select(
        DagRun.run_id, DagRun.state, DagRun.run_type, DagRun.start_date, DagRun.end_date
    ).where(DagRun.dag_id == dag_id, DagRun.run_id.in_(list(run_ids)))
    with create_session() as session:
        rows = session.execute(query).all()
    return {
        row.run_id: DagRunSnapshot(
            dag_id=dag_id,
            run_id=row.run_id,
            state=_text(row.state),
            run_type=_text(row.run_type) if row.run_type is not None else None,
            start_date=row.start_date,
            end_date=row.end_date,
        )
        for row in rows
    }


def _text(value: object) -> str:
    """An Airflow state or run type (a ``str`` enum) as its plain value."""
    return str(getattr(value, "value", value))
