"""Operators of Sluice's DAGs.

``sluice.py``: the steps of a pipeline DAG run (``RequestCheckpointOperator``,
``LandCheckpointOperator``, ``CommitCheckpointOperator``) and the run modes (``RunMode``);
``worker.py``: ``CollectorWorkerOperator``, the long-running collector with a bounded lease.
"""
