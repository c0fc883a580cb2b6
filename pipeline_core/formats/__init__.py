"""The source formats (:data:`FORMATS`): what each lands, defined once."""

from pipeline_core.formats._declared import declared_columns
from pipeline_core.formats._docs import formats_markdown
from pipeline_core.formats._format_spec import (
    JAVA_FRAMES,
    ColumnType,
    FormatColumn,
    FormatSpec,
    RejectReason,
    SourceFormat,
)
from pipeline_core.formats._json_columns import (
    RESCUED_COLUMN,
    JsonColumn,
    JsonColumnsError,
    json_columns,
)
from pipeline_core.formats._nginx_format import (
    TIME_LOCAL_LAYOUT,
    NginxFormatError,
    NginxLayout,
    nginx_log_format,
)
from pipeline_core.formats._python_logging import (
    ASCTIME_LAYOUT,
    DEFAULT_PYTHON_LOG_FORMAT,
    TRACEBACK_PATTERN,
    LogFormatError,
    PythonLogLayout,
    python_log_layout,
)
from pipeline_core.formats._registry import FORMATS, format_spec
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
    "JAVA_FRAMES",
    "RESCUED_COLUMN",
    "RESERVED_COLUMNS",
    "TIME_LOCAL_LAYOUT",
    "TRACEBACK_PATTERN",
    "ColumnType",
    "FormatColumn",
    "FormatSpec",
    "JsonColumn",
    "JsonColumnsError",
    "LogFormatError",
    "NginxFormatError",
    "NginxLayout",
    "PythonLogLayout",
    "RejectReason",
    "SourceFormat",
    "UserPattern",
    "UserPatternError",
    "declared_columns",
    "format_spec",
    "formats_markdown",
    "json_columns",
    "nginx_log_format",
    "python_log_layout",
    "user_pattern",
]
