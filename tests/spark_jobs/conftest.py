"""Spark tests share the session-scoped ``spark`` fixture of ``tests.support.spark``."""

from tests.support.spark import spark

__all__ = ["spark"]
