"""The source formats (:data:`FORMATS`): what each lands, defined once."""

from pipeline_core.formats._docs import formats_markdown
from pipeline_core.formats._python_logging import (
    ASCTIME_LAYOUT,
    TRACEBACK_PATTERN,
    LogFormatError,
    PythonLogLayout,
    python_log_layout,
)
from pipeline_core.formats._registry import (
    DEFAULT_PYTHON_LOG_FORMAT,
    FORMATS,
    ColumnType,
    FormatColumn,
    FormatSpec,
    RejectReason,
    SourceFormat,
    format_spec,
)
from pipeline_core.formats._user_pattern import (
    RESERVED_COLUMNS,
    UserPattern,
    UserPatternError,
    user_pattern,
)

__all__ = [
    "ASCTIME_LAYOUT",
    "DEFAULT_PYTHON_LOG_FORMAT",
    "FORMATS",
    "RESERVED_COLUMNS",
    "TRACEBACK_PATTERN",
    "ColumnType",
    "FormatColumn",
    "FormatSpec",
    "LogFormatError",
    "PythonLogLayout",
    "RejectReason",
    "SourceFormat",
    "UserPattern",
    "UserPatternError",
    "format_spec",
    "formats_markdown",
    "python_log_layout",
    "user_pattern",
]
