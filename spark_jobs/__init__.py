"""Spark jobs that turn sealed staging batches into lake tables.

Topology (``pipeline_core.staging_contract`` is the staging contract, docs/architecture.md
explains both ends)::

    <staging>/<pipeline>/<checkpoint:08d>/<host>/{_manifest.json, part-<source>-*.lines}
        │  checkpoint.py: the batches' manifests, read with the staging contract
        │  verification.py: the parts checked against their manifests (on the driver)
        ▼
    staging.py: the manifests' segments, read and split into lines on the executors
        ▼  (one read per source across hosts)
    formats.py: one parser per source format -> (parsed rows, rejects)
        ▼
    lake.py:
    <lake>/<source>/event_date=D/checkpoint_id=N/    parsed rows
    <lake>/_rejects/checkpoint_id=N/                 lines that did not parse
    <lake>/_landings/checkpoint_id=N.json            counts of the last landing

``landing.py`` runs those steps for one checkpoint (``land``); ``land_checkpoint.py`` is the
file spark-submit runs. Rejects are found by reconciling the landed rows with the staged lines
per source file, so only the segments of the files that hold rejects are read and parsed a
second time.

The modules import only pyspark (with pyarrow and NumPy, which its Arrow support needs), the
standard library, and two standard-library-only modules of ``pipeline_core`` (``errors`` and
``staging_contract``), so the package can be shipped to a cluster with ``--py-files``: the
archive ``pipeline_core.landing`` builds holds those two beside it. The executors import only
``staging.py``, which needs neither.
"""
