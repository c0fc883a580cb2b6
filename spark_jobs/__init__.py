"""Spark jobs that turn sealed staging batches into lake tables.

Topology (``pipeline_core.staging_contract`` is the staging contract, docs/architecture.md
explains both ends)::

    <staging>/<pipeline>/<checkpoint:08d>/<host>/{_manifest.json, part-<source>-*.lines}
        │  checkpoint.py: the batches' manifests, read with the staging contract
        │  verification.py: the parts checked against their manifests (on the driver)
        ▼
    staging.py: the manifests' segments, read and split into lines on the executors
        │  (segment_split.py: a segment's bytes split into events, vectorised)
        ▼  (one read per source across hosts)
    formats.py: one parser per source format -> (parsed rows, rejects)
        ▼
    lake.py: Parquet data files in a new folder of each table, counted
        ▼
    pipeline_core.lake.commit_files: one Iceberg commit per table (sources, then _rejects)

``landing.py`` runs those steps for any number of checkpoints at once (``land``); ``land.py``
is the file spark-submit runs. Rejects are found by reconciling the landed rows with the staged
lines per source file (``reconciliation.py``), so only the segments of the files that hold
rejects are read and parsed a second time.

The modules import pyspark (with pyarrow and NumPy, which its Arrow support needs), the
standard library and three modules of ``pipeline_core``: ``errors`` and ``staging_contract``
(standard library only) and ``lake`` (pyiceberg, on the driver only). The package can be
shipped to a cluster with ``--py-files``: the archive ``pipeline_core.landing`` builds holds
those beside it; a driver there needs pyiceberg installed. The executors import only
``staging.py`` (and ``segment_split.py``, ``session.py``), which need none of them.

The same code runs on a classic SparkSession (spark-submit) and on a Spark Connect session
(``land.py --remote``): it never touches the ``SparkContext``, RDDs, accumulators, broadcast
variables or the JVM, which Spark Connect does not have; ``session.py`` reads what the job
needs to know of its session from the session's configuration.
"""
