"""Sensors that wait on a Sluice checkpoint's state (``CheckpointSealedSensor``)."""
