"""Sluice: reliable log collection for Airflow and Spark platforms."""
