"""The compiled JSON lists of int64 columns (``_int_lists.c``); see
``pipeline_core.staging_contract._events``."""

import numpy as np

def json_int_list(column: bytes | bytearray | memoryview | np.ndarray, /) -> bytes: ...
