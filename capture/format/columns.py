"""The trace format's names and constants without pyarrow: schema version, kinds, column names.

:mod:`profui.capture.format.schema` builds the Arrow schemas from these; readers that only need
names (the validating opener, analysis) import this module and never load pyarrow.
"""

from __future__ import annotations

from pathlib import Path

#: Version of the on-disk layout and schemas. Bump on any incompatible change; readers refuse
#: files written by a newer version.
SCHEMA_VERSION = 1

#: Every value the ``kind`` column may hold.
EVENT_KINDS: tuple[str, ...] = (
    "cpu_op",
    "python",
    "annotation",
    "step",
    "runtime",
    "driver",
    "kernel",
    "memcpy",
    "memset",
    "sync",
    "gpu_annotation",
    "instant",
)

#: Kinds that run on a device (``device >= 0``) rather than on the host.
DEVICE_KINDS: frozenset[str] = frozenset({"kernel", "memcpy", "memset", "sync", "gpu_annotation"})

#: Column names of each table, in schema order (the Arrow schemas in ``schema.py`` match).
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "events": (
        "ts",
        "dur",
        "kind",
        "name",
        "pid",
        "tid",
        "device",
        "stream",
        "correlation",
        "external_id",
        "bytes",
        "memcpy_kind",
        "args",
    ),
    "metrics": ("ts", "source", "device", "metric", "value"),
}

#: Parquet key-value metadata keys written into every file.
META_SCHEMA_VERSION = b"profui.schema_version"
META_TABLE = b"profui.table"

#: The note an importer gives a source whose device lanes are host threads (a JAX run on CPU:
#: the threads that execute XLA ops): a trace whose device lanes all come from such sources has
#: CPU devices, no GPU (the note travels with the source, and through a Chrome-trace export).
CPU_LANES_NOTE = "JAX on CPU: the host threads that execute XLA ops are shown as the device's lanes (one stream per thread)"

#: File name endings of the foreign traces profui imports: PyTorch Profiler / Kineto JSON, and
#: Nsight Systems' SQLite export and the report it comes from.
KINETO_SUFFIXES = (".json", ".json.gz")
NSYS_SUFFIXES = (".sqlite", ".nsys-rep")
IMPORTABLE_SUFFIXES = (*KINETO_SUFFIXES, *NSYS_SUFFIXES)


def is_nsys_file(path: Path) -> bool:
    """True for a file whose name ends like an Nsight Systems export or report."""
    return path.name.lower().endswith(NSYS_SUFFIXES)
