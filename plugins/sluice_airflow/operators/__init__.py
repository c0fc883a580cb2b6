"""Operators for the steps of a Sluice DAG run: request, land and commit a checkpoint."""
