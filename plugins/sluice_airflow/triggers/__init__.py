"""Triggers waiting in the triggerer on a Sluice checkpoint (``CheckpointSealedTrigger``)."""
