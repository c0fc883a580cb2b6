"""Airflow integration of Sluice: hooks, operators and sensors over ``PipelineOperations``.

Layout (one file per tool in each role folder, as in Airflow's providers)::

    hooks/sluice.py      SluiceHook: lazily opens a pipeline's PipelineOperations
    operators/sluice.py  RequestCheckpointOperator, LandCheckpointOperator,
                         CommitCheckpointOperator
    sensors/sluice.py    CheckpointSealedSensor
    plugin.py            SluicePlugin: macros, the web app and its UI link, the listener
    web/                 the Sluice page and JSON API, mounted by the api-server at /sluice
    listeners.py         logs each sluice_* DAG run's outcome against its checkpoint

A pipeline's DAG run N is: request checkpoint N -> wait until N is sealed -> spark-submit the
landing job for N -> commit N. Every decision lives in ``pipeline_core``; these classes only
translate between Airflow's task context and the facade. Operators are ordinary modules here
(Airflow 3 does not register operators through plugins): import them from
``sluice_airflow.operators.sluice`` and friends.
"""
