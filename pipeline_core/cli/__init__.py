"""The ``sluice`` command (also ``python -m pipeline_core``): one module per command.

::

    sluice [-v|--debug] [--version] COMMAND ...
      validate CONFIG|FOLDER [--json]     preflight: schema, schedule, globs, folders,
                                          metastore, lake catalog, sinks   (_validate, _preflight)
      collect CONFIG|FOLDER [--once]      tail, or read once, into sealed checkpoints  (_collect)
      land CONFIG [--dry-run] [--json]    one Spark job, one commit per table            (_land)
      compact CONFIG                      lake maintenance                             (_compact)
      status CONFIG [--json]              files, checkpoints, lease, live metrics      (_status)
      report CONFIG [--json]              what the lake tables hold                    (_report)
      db upgrade|current CONFIG|FOLDER    the metastore's migrations                        (_db)
      formats [--markdown]                the source formats and their columns          (_formats)
      sample-logs FOLDER                  sample nginx access logs                  (_sample_logs)

Every failure is one line on stderr naming what failed and where (``-v`` adds the traceback)
and an exit status that says what kind of failure it was (:class:`ExitCode`). ``status``,
``report`` and ``validate`` only read: they never create or migrate the metastore; ``collect``
and ``land`` (and the Airflow tasks), which own it, migrate it when they open it.

Importing the package is quick: what a command needs is imported when it runs, so that
``sluice collect`` takes stop signals before its slow start-up.
"""

from pipeline_core.cli._exit_codes import ExitCode, exit_code_of
from pipeline_core.cli._main import main

__all__ = ["ExitCode", "exit_code_of", "main"]
