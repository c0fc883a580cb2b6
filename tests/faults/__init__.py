"""The fault matrix: the pipeline under crashes, retries, outages and bad input.

============================  =============================================================
``test_kill_collector``       ``sluice collect`` SIGKILLed at random moments (20+ times) while
                              a writer appends and rotates (rename, copytruncate) and DAG
                              runs request checkpoints; the lake holds every line once
``test_seal_crash_points``    a collector killed between each two steps of a seal; no orphan
                              batch is landed or counted, the next run loses nothing
``test_landing_retries``      the Spark job run twice, failing midway, on an unreadable part,
                              and a backfill of committed intervals
``test_metastore_outages``    the metastore write-locked, or (PostgreSQL) refusing
                              connections, while the collector seals
``test_bad_input``            hostile bytes, a 50 MB line, truncated, deleted, unreadable or
                              replaced files, symlink loops, folders on the glob
``test_hostile_config``       malformed and hostile configs: one clear error, nothing started
============================  =============================================================

Knobs (environment):

* ``SLUICE_FAULT_SEED``: replay a run's random choices (every test prints its seed and adds it
  to its report);
* ``SLUICE_FAULT_MB``: megabytes the kill -9 test writes (default 200).

Run: ``.venv/bin/pytest tests/faults -q -p no:cacheprovider``; the figures of the kill -9 test
appear in a "fault matrix" section at the end of the run.
"""
