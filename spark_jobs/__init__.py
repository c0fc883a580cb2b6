"""Spark jobs that turn sealed staging batches into lake tables.

Topology (docs/architecture.md is the contract for both ends)::

    <staging>/<pipeline>/<checkpoint:08d>/<host>/{_manifest.json, part-<source>-*.lines}
        │  land_checkpoint.py: check the parts against their manifests (on the driver)
        ▼
    staging.py: the manifests' segments, read and split into lines on the executors
        ▼  (one read per source across hosts)
    formats.py: one parser per source format -> (parsed rows, rejects)
        ▼
    <lake>/<source>/event_date=D/checkpoint_id=N/    parsed rows
    <lake>/_rejects/checkpoint_id=N/                 lines that did not parse
    <lake>/_landings/checkpoint_id=N.json            counts of the last landing

Rejects are found by reconciling the landed rows with the staged lines per source file, so only
the segments of the files that hold rejects are read and parsed a second time.

The modules import only pyspark (with pyarrow and NumPy, which its Arrow support needs) and the
standard library, so the package can be shipped to a cluster with ``--py-files``.
"""
