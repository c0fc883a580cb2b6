"""The logs of named programs' logging libraries: Spark's log4j2 pattern and its structured JSON,
Python's ``logging``, and Airflow's task logs.
"""

from __future__ import annotations

from pipeline_core.formats._format_spec import (
    CUT_COLUMN,
    EVENT_LINES_COLUMN,
    PATTERN_REJECTS,
    ColumnType,
    FormatColumn,
    FormatSpec,
    RejectReason,
    SourceFormat,
)

_JSON_LOG_REJECTS = (
    RejectReason.INVALID_UTF8,
    RejectReason.INVALID_JSON,
    RejectReason.NO_MATCH,
    RejectReason.BAD_TIMESTAMP,
    RejectReason.LINE_TOO_LONG,
)
"""The rejects of a log written as one JSON object a line, with its time in a key."""

APPLICATION_LOG_FORMATS: tuple[FormatSpec, ...] = (
    FormatSpec(
        SourceFormat.SPARK_LOG4J,
        "Spark's log4j2 log (drivers and executors) in Spark's default pattern, "
        "``%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex``. Give the source "
        "``multiline: {preset: java}`` to keep a record's stack trace in its row.",
        (
            FormatColumn("level", ColumnType.STRING, "``%p``: ``INFO``, ``WARN``, ``ERROR``."),
            FormatColumn("logger", ColumnType.STRING, "``%c{1}``: the logger's last name part."),
            FormatColumn(
                "message",
                ColumnType.STRING,
                "``%m``: the message, up to the line where its exception begins.",
            ),
            FormatColumn(
                "exception",
                ColumnType.STRING,
                "``%ex``: the exception's class and message, its frames, ``Caused by:`` "
                "and ``Suppressed:``; null when there is none.",
            ),
            EVENT_LINES_COLUMN,
            CUT_COLUMN,
        ),
        "``%d{yy/MM/dd HH:mm:ss}`` (to the second) in the source's ``timezone`` (default "
        "UTC: log4j writes the JVM's local time, with no offset).",
        PATTERN_REJECTS,
    ),
    FormatSpec(
        SourceFormat.PYTHON_LOGGING,
        "What Python's ``logging`` writes, read with the source's ``log_format`` (the "
        "``Formatter`` format string, ending with ``%(message)s``; default "
        "``%(levelname)s:%(name)s:%(message)s``, ``logging.basicConfig``'s). Give the source "
        "``multiline: {preset: python}`` to keep a record's traceback in its row.",
        (
            FormatColumn("level", ColumnType.STRING, "``%(levelname)s``."),
            FormatColumn("logger", ColumnType.STRING, "``%(name)s``."),
            FormatColumn(
                "message",
                ColumnType.STRING,
                "``%(message)s``: the message, all its lines, without what ``logging`` "
                "appended to it.",
            ),
            FormatColumn(
                "exception",
                ColumnType.STRING,
                "What ``logging`` appended to the message: the traceback of "
                "``logger.exception`` (chained exceptions and groups included) and "
                "``stack_info``; null when there is none.",
            ),
            FormatColumn("filename", ColumnType.STRING, "``%(filename)s`` (or ``%(pathname)s``)."),
            FormatColumn("lineno", ColumnType.INT, "``%(lineno)d``."),
            FormatColumn("func_name", ColumnType.STRING, "``%(funcName)s``."),
            FormatColumn("process", ColumnType.LONG, "``%(process)d``."),
            FormatColumn("thread_name", ColumnType.STRING, "``%(threadName)s``."),
            EVENT_LINES_COLUMN,
            CUT_COLUMN,
        ),
        "``%(asctime)s`` (``logging``'s default ``datefmt``, ``2026-11-28 13:00:00,123``) in "
        "the source's ``timezone`` (default UTC: ``logging`` writes the local time of the "
        "process, with no offset), or ``%(created)f``; the seal time when the format names "
        "neither. A column the format does not name is null.",
        PATTERN_REJECTS,
    ),
    FormatSpec(
        SourceFormat.AIRFLOW_TASK,
        "Airflow 3's task logs (``<base_log_folder>/dag_id=.../run_id=.../task_id=.../"
        "attempt=N.log``): one JSON object a line, as the task supervisor's structlog "
        "writes it.",
        (
            FormatColumn(
                "level", ColumnType.STRING, "``level``: ``debug``, ``info``, ``warning``, ..."
            ),
            FormatColumn(
                "logger",
                ColumnType.STRING,
                "``logger``: the Python logger's name (``task``, ``task.stdout``, the task's own).",
            ),
            FormatColumn("message", ColumnType.STRING, "``event``: the message."),
            FormatColumn(
                "error",
                ColumnType.STRING,
                "``error_detail`` as JSON text (a failure's exceptions, each with its "
                "``exc_type``, ``exc_value`` and ``frames``); null when there is none.",
            ),
            FormatColumn(
                "extra",
                ColumnType.MAP,
                "Every other top-level key (``dag_id``, ``task_id``, ``run_id``, "
                "``try_number``, ``filename``, ``lineno``, ...): a string as it is, any "
                "other value as its JSON text (a number as Spark prints it), ``null`` "
                "as null.",
            ),
        ),
        "``timestamp`` (ISO 8601, its own offset: structlog writes UTC with ``Z``; "
        "without an offset, UTC), to the microsecond.",
        _JSON_LOG_REJECTS,
    ),
    FormatSpec(
        SourceFormat.SPARK_JSON,
        "Spark's structured JSON logging (``spark.log.structuredLogging.enabled=true``, "
        "log4j2's ``JsonTemplateLayout`` with Spark's ``SparkLayout.json``): one JSON "
        "object a line, ``ts``, ``level``, ``msg``, ``context``, ``exception``, "
        "``logger``.",
        (
            FormatColumn("level", ColumnType.STRING, "``level``: ``INFO``, ``WARN``, ..."),
            FormatColumn("logger", ColumnType.STRING, "``logger``: the logger's last name part."),
            FormatColumn("message", ColumnType.STRING, "``msg``."),
            FormatColumn(
                "context",
                ColumnType.MAP,
                "``context``: the record's MDC (``executor_id``, ``task_name``, ...); "
                "empty when it has none.",
            ),
            FormatColumn(
                "exception",
                ColumnType.EXCEPTION,
                "``exception``: its ``class``, its ``message`` (``msg``) and its ``frames`` "
                "(``stacktrace``), each frame's ``class``, ``method``, ``file`` (null when "
                "Java knew none) and ``line`` (-1 when unknown, -2 for a native method); "
                "null when the record has no exception. A frame prints as Java prints it: "
                "``concat(f.class, '.', f.method, '(', f.file, ':', f.line, ')')``.",
            ),
        ),
        "``ts`` (``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'``, UTC; any ISO 8601 time with an "
        "offset, or without one in UTC), to the microsecond.",
        _JSON_LOG_REJECTS,
    ),
)
"""The application log formats, in :class:`SourceFormat`'s order."""
