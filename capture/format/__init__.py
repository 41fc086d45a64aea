"""The trace format: the contract between capture, analysis and the TUI.

On-disk layout, Arrow schemas, manifest, whole-file writers and a validating opener.
Imports only pyarrow and the standard library, and pyarrow only when a name that needs it
(the Arrow schemas, the writers) is first used: readers (``open_trace_dir``) never load it.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .atomic import atomic_path, write_bytes_atomic
    from .columns import (
        DEVICE_KINDS,
        EVENT_KINDS,
        IMPORTABLE_SUFFIXES,
        KINETO_SUFFIXES,
        NSYS_SUFFIXES,
        SCHEMA_VERSION,
        TABLE_COLUMNS,
    )
    from .errors import TraceFormatError
    from .fingerprint import digest as fingerprint_digest
    from .fingerprint import files_fingerprint, trace_fingerprint
    from .footer import Footer, FooterError, read_footer
    from .layout import (
        MANIFEST_NAME,
        PRIVATE_DIR,
        adopt_events,
        default_cache_root,
        events_path,
        manifest_path,
        metrics_path,
        node_dir,
        private_dir_for,
        rank_dir,
        safe_node_name,
    )
    from .manifest import STATUSES, Manifest, read_manifest, write_manifest
    from .opener import (
        TraceDir,
        TraceFile,
        check_file,
        find_trace_dirs,
        is_trace_dir,
        list_trace_files,
        open_trace_dir,
        open_trace_layout,
    )
    from .schema import EVENTS_SCHEMA, METRICS_SCHEMA
    from .writer import to_table, write_events, write_metrics, write_table

#: Where each name lives ("module" or "module:attribute"), loaded on first use (PEP 562): the
#: writers and schemas import pyarrow, and a command that only names TraceFormatError (every
#: ``profui`` command, ``--help`` included) should not pay for the manifest's, the lock's and the
#: fingerprint's imports (json, socket, hashlib, secrets).
_LAZY = {
    "atomic_path": "atomic",
    "write_bytes_atomic": "atomic",
    **dict.fromkeys(
        [
            "DEVICE_KINDS",
            "EVENT_KINDS",
            "IMPORTABLE_SUFFIXES",
            "KINETO_SUFFIXES",
            "NSYS_SUFFIXES",
            "SCHEMA_VERSION",
            "TABLE_COLUMNS",
        ],
        "columns",
    ),
    "TraceFormatError": "errors",
    "fingerprint_digest": "fingerprint:digest",
    "files_fingerprint": "fingerprint",
    "trace_fingerprint": "fingerprint",
    "Footer": "footer",
    "FooterError": "footer",
    "read_footer": "footer",
    **dict.fromkeys(
        [
            "MANIFEST_NAME",
            "PRIVATE_DIR",
            "adopt_events",
            "default_cache_root",
            "events_path",
            "manifest_path",
            "metrics_path",
            "node_dir",
            "private_dir_for",
            "rank_dir",
            "safe_node_name",
        ],
        "layout",
    ),
    **dict.fromkeys(["STATUSES", "Manifest", "read_manifest", "write_manifest"], "manifest"),
    **dict.fromkeys(
        [
            "TraceDir",
            "TraceFile",
            "check_file",
            "find_trace_dirs",
            "is_trace_dir",
            "list_trace_files",
            "open_trace_dir",
            "open_trace_layout",
        ],
        "opener",
    ),
    "EVENTS_SCHEMA": "schema",
    "METRICS_SCHEMA": "schema",
    "to_table": "writer",
    "write_events": "writer",
    "write_metrics": "writer",
    "write_table": "writer",
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    module, _, attr = where.partition(":")
    value = getattr(import_module(f".{module}", __name__), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


__all__ = [
    "IMPORTABLE_SUFFIXES",
    "KINETO_SUFFIXES",
    "NSYS_SUFFIXES",
    "DEVICE_KINDS",
    "EVENTS_SCHEMA",
    "EVENT_KINDS",
    "Footer",
    "FooterError",
    "MANIFEST_NAME",
    "METRICS_SCHEMA",
    "PRIVATE_DIR",
    "private_dir_for",
    "SCHEMA_VERSION",
    "STATUSES",
    "TABLE_COLUMNS",
    "Manifest",
    "TraceDir",
    "TraceFile",
    "TraceFormatError",
    "adopt_events",
    "atomic_path",
    "check_file",
    "default_cache_root",
    "events_path",
    "files_fingerprint",
    "find_trace_dirs",
    "fingerprint_digest",
    "is_trace_dir",
    "manifest_path",
    "metrics_path",
    "node_dir",
    "open_trace_dir",
    "open_trace_layout",
    "list_trace_files",
    "rank_dir",
    "read_footer",
    "read_manifest",
    "safe_node_name",
    "to_table",
    "trace_fingerprint",
    "write_bytes_atomic",
    "write_events",
    "write_manifest",
    "write_metrics",
    "write_table",
]
