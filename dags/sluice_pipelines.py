"""Sluice's DAGs: three per pipeline config (``sluice_airflow.dag_factory`` documents them).

The configs are the ``*.yaml`` files of ``$SLUICE_PIPELINES_DIR``, else of Airflow's
``[sluice] pipelines_dir``, else of ``pipelines/`` beside this folder.
"""

from sluice_airflow.dag_factory import pipeline_dags

globals().update(pipeline_dags())
