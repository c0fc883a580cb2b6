"""Operators of Sluice's DAGs.

``sluice.py``: the steps of a pipeline DAG run (``RequestCheckpointOperator``,
``LandCheckpointOperator``, ``CommitCheckpointOperator``) and the ``mode`` param's choices
(``RunMode``; what each mode does is decided in ``pipeline_core.runs``);
``worker.py``: ``CollectorWorkerOperator``, the long-running collector with a bounded lease.
"""
