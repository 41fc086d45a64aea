"""The trace format: the contract between capture, analysis and the TUI.

On-disk layout, Arrow schemas, manifest, whole-file writers and a validating opener.
Imports only pyarrow and the standard library.
"""

from .atomic import atomic_path, write_bytes_atomic
from .errors import TraceFormatError
from .layout import (
    MANIFEST_NAME,
    PRIVATE_DIR,
    events_path,
    manifest_path,
    metrics_path,
    node_dir,
    rank_dir,
    safe_node_name,
)
from .manifest import STATUSES, Manifest, read_manifest, write_manifest
from .opener import TraceDir, TraceFile, check_file, find_trace_dirs, is_trace_dir, open_trace_dir
from .schema import DEVICE_KINDS, EVENT_KINDS, EVENTS_SCHEMA, METRICS_SCHEMA, SCHEMA_VERSION
from .writer import to_table, write_events, write_metrics, write_table

__all__ = [
    "DEVICE_KINDS",
    "EVENTS_SCHEMA",
    "EVENT_KINDS",
    "MANIFEST_NAME",
    "METRICS_SCHEMA",
    "PRIVATE_DIR",
    "SCHEMA_VERSION",
    "STATUSES",
    "Manifest",
    "TraceDir",
    "TraceFile",
    "TraceFormatError",
    "atomic_path",
    "check_file",
    "events_path",
    "find_trace_dirs",
    "is_trace_dir",
    "manifest_path",
    "metrics_path",
    "node_dir",
    "open_trace_dir",
    "rank_dir",
    "read_manifest",
    "safe_node_name",
    "to_table",
    "write_bytes_atomic",
    "write_events",
    "write_manifest",
    "write_metrics",
    "write_table",
]
