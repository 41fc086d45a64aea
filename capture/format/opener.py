"""The validating opener: everything a reader needs to know about a trace directory.

Analysis opens traces only through :func:`open_trace_dir`, so every reader gets the same checks
and the same one-line errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from .columns import META_SCHEMA_VERSION, META_TABLE, SCHEMA_VERSION, TABLE_COLUMNS
from .errors import TraceFormatError
from .footer import FooterError, read_footer
from .layout import MANIFEST_NAME, is_events_file, is_metrics_file, parse_partition, private_dir_for
from .manifest import Manifest, read_manifest
from .regular import not_utf8


@dataclass(frozen=True)
class TraceFile:
    """One Parquet file of a trace, with its partition values."""

    table: str  # "events" | "metrics"
    path: Path
    node: str
    rank: int | None  # None for metrics files
    num_rows: int


@dataclass
class TraceDir:
    """An opened, validated trace directory."""

    path: Path
    manifest: Manifest
    events: list[TraceFile] = field(default_factory=list)
    metrics: list[TraceFile] = field(default_factory=list)

    @property
    def nodes(self) -> list[str]:
        """Node names present in the data, sorted."""
        return sorted({f.node for f in self.events} | {f.node for f in self.metrics})

    @property
    def ranks(self) -> list[tuple[str, int]]:
        """(node, rank) pairs with events, sorted."""
        return sorted({(f.node, f.rank) for f in self.events if f.rank is not None})

    @property
    def private_dir(self) -> Path:
        """The trace's private folder (:func:`.layout.private_dir_for`; may not exist yet)."""
        return private_dir_for(self.path)

    @property
    def num_events(self) -> int:
        """Total rows over all events files."""
        return sum(f.num_rows for f in self.events)


def is_trace_dir(path: str | Path) -> bool:
    """True when ``path`` is a folder holding a ``manifest.json`` (of any file type: one that
    cannot be read, a FIFO say, is then refused by name when the trace is opened)."""
    p = Path(path)
    try:
        return p.is_dir() and (p / MANIFEST_NAME).exists() and not (p / MANIFEST_NAME).is_dir()
    except (OSError, ValueError):  # a name too long for the file system, a NUL: no folder of ours
        return False


def find_trace_dirs(root: str | Path, max_depth: int = 3) -> list[Path]:
    """Trace directories at or below ``root`` (not descending into a trace), sorted by path."""
    root = Path(root)
    found: list[Path] = []

    def walk(p: Path, depth: int) -> None:
        if is_trace_dir(p):
            found.append(p)
            return
        if depth >= max_depth:
            return
        try:
            children = sorted(c for c in p.iterdir() if c.is_dir() and not c.name.startswith("."))
        except OSError:
            return
        for c in children:
            walk(c, depth + 1)

    walk(root, 0)
    return found


def check_file(path: Path, table: str) -> int:
    """Validate one Parquet file's footer; return its row count.

    The footer is read in plain Python (:mod:`.footer`), so opening a trace never loads pyarrow.
    """
    try:
        footer = read_footer(path)
    except PermissionError:
        raise TraceFormatError(path, "permission denied") from None
    except (OSError, FooterError) as exc:
        raise TraceFormatError(path, f"not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    kv = footer.metadata
    version_raw = kv.get(META_SCHEMA_VERSION)
    if version_raw is None:
        raise TraceFormatError(path, "Parquet file without profui schema version: not written by profui")
    try:
        version = int(version_raw)
    except ValueError:
        raise TraceFormatError(path, f"bad profui schema version {version_raw!r}") from None
    if version > SCHEMA_VERSION:
        raise TraceFormatError(
            path,
            f"written by a newer profui (schema version {version}, this one reads up to {SCHEMA_VERSION}); upgrade profui",
        )
    stored_table = kv.get(META_TABLE, b"").decode()
    if stored_table and stored_table != table:
        raise TraceFormatError(path, f"holds the {stored_table!r} table where {table!r} was expected")
    missing = [n for n in TABLE_COLUMNS[table] if n not in footer.columns]
    if missing:
        raise TraceFormatError(path, f"{table} file lacks column(s) {', '.join(missing)}")
    return footer.num_rows


def list_trace_files(root: Path) -> list[TraceFile]:
    """The data files of the trace folder ``root`` with their partition values, in path order,
    their footers not read yet (``num_rows`` is -1; :func:`check_file` reads it).

    The one walk of the Hive layout: :func:`open_trace_dir` checks every file it lists; a reader
    of one rank (``profui.analysis.ranks``) checks only that rank's files.
    """
    found: list[TraceFile] = []
    for node_path in sorted(root.iterdir()):
        node = parse_partition(node_path.name, "node")
        if node is None or not node_path.is_dir():
            continue
        for child in sorted(node_path.iterdir()):
            # not is_file(): a FIFO or a dangling link named like a data file is refused by
            # check_file, never skipped (the trace would silently lose that file's events)
            if is_metrics_file(child.name) and not child.is_dir():
                found.append(TraceFile("metrics", child, node, None, -1))
                continue
            rank_raw = parse_partition(child.name, "rank")
            if rank_raw is None or not child.is_dir():
                continue
            try:
                rank = int(rank_raw)
            except ValueError:
                raise TraceFormatError(child, "rank folder name is not an integer") from None
            for f in sorted(child.iterdir()):
                if is_events_file(f.name) and not f.is_dir():
                    found.append(TraceFile("events", f, node, rank, -1))
    return found


def open_trace_layout(path: str | Path) -> TraceDir:
    """A trace directory's manifest and data files, their footers not read yet (every
    ``num_rows`` is -1): the folder and the manifest are checked as :func:`open_trace_dir` checks
    them. For a reader that checks each rank's files where it reads them (a cluster's workers),
    so one corrupt rank can be named and skipped; the check is :func:`check_file`.
    """
    root = Path(path)
    if not root.exists():
        raise TraceFormatError(root, "no such file or directory")
    bad_name = not_utf8(root.absolute())
    if bad_name:
        raise TraceFormatError(root, bad_name)
    if not root.is_dir():
        raise TraceFormatError(root, "not a directory (expected a profui trace folder)")
    trace = TraceDir(path=root, manifest=read_manifest(root))
    for f in list_trace_files(root):
        (trace.metrics if f.table == "metrics" else trace.events).append(f)
    return trace


def open_trace_dir(path: str | Path, require_data: bool = True) -> TraceDir:
    """Open and validate a trace directory.

    Checks the folder, the manifest and every Parquet footer (cheap: no data is read).
    Temporary files of a writer still at work are ignored, so a trace that is still
    ``running`` opens with what has landed so far. Raises :class:`TraceFormatError`.
    """
    layout = open_trace_layout(path)
    trace = TraceDir(
        path=layout.path,
        manifest=layout.manifest,
        events=[replace(f, num_rows=check_file(f.path, f.table)) for f in layout.events],
        metrics=[replace(f, num_rows=check_file(f.path, f.table)) for f in layout.metrics],
    )
    # a capture still at work, or killed before it wrote anything, is a trace without data yet
    unfinished = trace.manifest.status in ("running", "interrupted")
    if require_data and not trace.events and not trace.metrics and not unfinished:
        raise TraceFormatError(trace.path, "empty trace: no events or metrics files")
    return trace
