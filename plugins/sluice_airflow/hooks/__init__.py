"""Hooks: the connection from Airflow tasks to a Sluice pipeline (``SluiceHook``)."""
