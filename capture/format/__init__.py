"""The trace format: the contract between capture, analysis and the TUI.

On-disk layout, Arrow schemas, manifest, whole-file writers and a validating opener.
Imports only pyarrow and the standard library, and pyarrow only when a name that needs it
(the Arrow schemas, the writers) is first used: readers (``open_trace_dir``) never load it.
"""

from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:
    from .atomic import atomic_path as atomic_path
    from .atomic import write_bytes_atomic as write_bytes_atomic
    from .columns import (
        DEVICE_KINDS as DEVICE_KINDS,
    )
    from .columns import (
        EVENT_KINDS as EVENT_KINDS,
    )
    from .columns import (
        IMPORTABLE_SUFFIXES as IMPORTABLE_SUFFIXES,
    )
    from .columns import (
        KINETO_SUFFIXES as KINETO_SUFFIXES,
    )
    from .columns import (
        NSYS_SUFFIXES as NSYS_SUFFIXES,
    )
    from .columns import (
        SCHEMA_VERSION as SCHEMA_VERSION,
    )
    from .columns import (
        TABLE_COLUMNS as TABLE_COLUMNS,
    )
    from .errors import TraceFormatError as TraceFormatError
    from .fingerprint import digest as fingerprint_digest  # noqa: F401 (renamed: not a re-export form)
    from .fingerprint import files_fingerprint as files_fingerprint
    from .fingerprint import trace_fingerprint as trace_fingerprint
    from .footer import Footer as Footer
    from .footer import FooterError as FooterError
    from .footer import read_footer as read_footer
    from .layout import (
        MANIFEST_NAME as MANIFEST_NAME,
    )
    from .layout import (
        PRIVATE_DIR as PRIVATE_DIR,
    )
    from .layout import (
        adopt_events as adopt_events,
    )
    from .layout import (
        default_cache_root as default_cache_root,
    )
    from .layout import (
        events_path as events_path,
    )
    from .layout import (
        manifest_path as manifest_path,
    )
    from .layout import (
        metrics_path as metrics_path,
    )
    from .layout import (
        node_dir as node_dir,
    )
    from .layout import (
        private_dir_for as private_dir_for,
    )
    from .layout import (
        rank_dir as rank_dir,
    )
    from .layout import (
        safe_node_name as safe_node_name,
    )
    from .manifest import (
        STATUSES as STATUSES,
    )
    from .manifest import (
        Manifest as Manifest,
    )
    from .manifest import (
        read_manifest as read_manifest,
    )
    from .manifest import (
        write_manifest as write_manifest,
    )
    from .opener import (
        TraceDir as TraceDir,
    )
    from .opener import (
        TraceFile as TraceFile,
    )
    from .opener import (
        check_file as check_file,
    )
    from .opener import (
        find_trace_dirs as find_trace_dirs,
    )
    from .opener import (
        is_trace_dir as is_trace_dir,
    )
    from .opener import (
        list_trace_files as list_trace_files,
    )
    from .opener import (
        open_trace_dir as open_trace_dir,
    )
    from .opener import (
        open_trace_layout as open_trace_layout,
    )
    from .schema import EVENTS_SCHEMA as EVENTS_SCHEMA
    from .schema import METRICS_SCHEMA as METRICS_SCHEMA
    from .writer import (
        to_table as to_table,
    )
    from .writer import (
        write_events as write_events,
    )
    from .writer import (
        write_metrics as write_metrics,
    )
    from .writer import (
        write_table as write_table,
    )

#: Where each name lives ("module" or "module:attribute"), loaded on first use (PEP 562): the
#: writers and schemas import pyarrow, and a command that only names TraceFormatError (every
#: ``profui`` command, ``--help`` included) should not pay for the manifest's, the lock's and the
#: fingerprint's imports (json, socket, hashlib, secrets).
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
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
    },
)
