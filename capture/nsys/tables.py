"""Reading an Nsight Systems SQLite export: opened read-only, its tables and strings, its metadata.

The export's schema grows between Nsight versions (columns are added, rarely removed), so every
query names only the columns the file has (:meth:`Export.select`). Strings are ids into
``StringIds``; enums are ids into ``ENUM_*`` tables, read by name so that renumbering between
versions cannot mislabel a row.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from profui.capture.format import NSYS_SUFFIXES as NSYS_SUFFIXES  # re-exported by the package
from profui.capture.format import TraceFormatError
from profui.capture.format.columns import is_nsys_file as is_nsys_file  # the suffix rule
from profui.capture.format.regular import not_regular

from .cell_text import text

if TYPE_CHECKING:
    import pyarrow as pa

_SQLITE_MAGIC = b"SQLite format 3\x00"
_EXPORT_TIMEOUT_S = 3600
#: Tables with the events profui maps; an export holding none of them has nothing to import.
ACTIVITY_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
)


class NsysFormatError(TraceFormatError):
    """A file is missing, unreadable or not an Nsight Systems export; ``str(err)`` is one line."""


class Export:
    """An open Nsight Systems SQLite export (read-only; close it, or use it as a context)."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn
        self.tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        self._columns: dict[str, set[str]] = {}
        self._string_ids: tuple[pa.Array, pa.Array] | None = None

    def __enter__(self) -> Export:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()

    def lacks(self, table: str, *groups: tuple[str, ...]) -> list[str]:
        """Of ``groups`` (alternative columns, any one of which will do), those ``table`` has no
        column of, spelled ``a`` or ``a/b``; empty when the export lacks the table itself."""
        have = self.columns(table)
        return ["/".join(g) for g in groups if have and not have.intersection(g)]

    def count(self, table: str) -> int:
        """The number of rows of ``table`` (0 when the export lacks it)."""
        if table not in self.tables:
            return 0
        return self.conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]

    def columns(self, table: str) -> set[str]:
        """The columns ``table`` has (empty when the export lacks the table)."""
        if table not in self._columns:
            rows = (
                self.conn.execute(f'PRAGMA table_info("{table}")').fetchall() if table in self.tables else []
            )
            self._columns[table] = {r[1] for r in rows}
        return self._columns[table]

    def select(self, table: str, wanted: tuple[str, ...], where: str = "") -> Iterator[dict[str, object]]:
        """Rows of ``table`` as dicts of the ``wanted`` columns; a column the export lacks is None."""
        have = self.columns(table)
        if not have:
            return iter(())
        names = [c for c in wanted if c in have]
        quoted = ", ".join(f'"{c}"' for c in names)
        sql = f'SELECT {quoted} FROM "{table}"' + (f" WHERE {where}" if where else "")
        missing = {c: None for c in wanted if c not in have}

        def rows() -> Iterator[dict[str, object]]:
            for r in self.conn.execute(sql):
                if bytes in map(type, r):
                    r = tuple(map(text, r))
                yield {**missing, **dict(zip(names, r, strict=True))}

        return rows()

    def fetch(self, sql: str) -> dict[str, Sequence[Any]]:
        """The result of ``sql`` column by column: name -> its cells, in the result's order."""
        cursor = self.conn.execute(sql)
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
        return dict(zip(names, columns, strict=True))

    def string_ids(self) -> tuple[pa.Array, pa.Array]:
        """``StringIds`` as (ids, texts): the rows with an integer id and a text (a BLOB read as
        its text), in the table's order; the last of an id is its text."""
        if self._string_ids is None:
            import pyarrow as pa  # only a conversion needs Arrow, not telling an export apart

            from .arrays import strings

            cols = self.fetch(
                "SELECT id, value FROM StringIds WHERE typeof(id) = 'integer' AND typeof(value) IN ('text', 'blob')"
            )
            self._string_ids = (pa.array(cols["id"], pa.int64()), strings(cols["value"]))
        return self._string_ids

    def strings(self) -> dict[int, str]:
        """``StringIds``: id -> text."""
        ids, texts = self.string_ids()
        return dict(zip(ids.to_pylist(), texts.to_pylist(), strict=True))

    def enum(self, table: str) -> dict[int, str]:
        """An ``ENUM_*`` table: id -> its ``name`` (empty when the export lacks it)."""
        if "name" not in self.columns(table):
            return {}
        return {i: text(n) for i, n in self.conn.execute(f'SELECT id, name FROM "{table}"')}

    def key_values(self, table: str, key: str = "name", value: str = "value") -> dict[str, str]:
        """A two-column metadata table (``META_DATA_EXPORT``, ``TARGET_INFO_SYSTEM_ENV``) as a dict."""
        if not {key, value} <= self.columns(table):
            return {}
        rows = self.conn.execute(f'SELECT "{key}", "{value}" FROM "{table}"')
        return {str(text(k)): str(text(v)) for k, v in rows}

    def epoch_offset_ns(self) -> int:
        """What to add to the export's times to make them ns since the Unix epoch.

        Nsight stores raw target-clock times (``EXPORT_PARAM_TIME_NORMALIZE`` false); the
        session's start is recorded on both clocks in ``TARGET_INFO_SESSION_START_TIME``.
        0 when the export does not say.
        """
        cols = self.columns("TARGET_INFO_SESSION_START_TIME")
        if {"utcEpochNs", "systemClockNs"} <= cols:
            row = self.conn.execute(
                "SELECT utcEpochNs, systemClockNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1"
            ).fetchone()
            if row and isinstance(row[0], int) and isinstance(row[1], int):
                return row[0] - row[1]
        return 0


def open_export(path: str | Path) -> Export:
    """Open ``path`` (an ``nsys export --type sqlite`` file) read-only, checked to be one.

    Raises :class:`NsysFormatError` naming the file for anything else: not SQLite, a corrupt
    database, SQLite that is not an Nsight Systems export, an export with no CUDA or NVTX rows.
    """
    path = Path(path)
    problem = not_regular(path)  # a FIFO, device or socket would block or mislead the read
    if problem:
        raise NsysFormatError(path, problem)
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise NsysFormatError(path, f"cannot read the file ({exc.strerror or exc})") from None
    if head != _SQLITE_MAGIC:
        raise NsysFormatError(path, "not an SQLite file (expected an `nsys export --type sqlite` export)")
    conn = None
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=ro&immutable=1", uri=True)
        export = Export(path, conn)
    except sqlite3.DatabaseError as exc:
        if conn is not None:
            conn.close()
        raise NsysFormatError(path, f"corrupt SQLite database ({exc})") from None
    if "StringIds" not in export.tables:
        conn.close()
        raise NsysFormatError(path, "SQLite, but not an Nsight Systems export (no StringIds table)")
    if not any(t in export.tables for t in ACTIVITY_TABLES):
        conn.close()
        raise NsysFormatError(
            path,
            "Nsight Systems export with no CUDA or NVTX events (record with `nsys profile -t cuda,nvtx`)",
        )
    return export


def exported_sqlite(report: Path, workdir: Path) -> Path:
    """The SQLite export of the report ``report`` (``.nsys-rep``), made with the ``nsys`` on PATH
    into ``workdir``. Raises :class:`NsysFormatError` when there is no ``nsys`` or it fails."""
    nsys = shutil.which("nsys")
    if nsys is None:
        raise NsysFormatError(
            report,
            f"an Nsight Systems report and no nsys on PATH: run `nsys export --type sqlite {report.name}`",
        )
    out = Path(tempfile.mkdtemp(prefix="nsys-export-", dir=workdir)) / (report.stem + ".sqlite")
    try:
        done = subprocess.run(
            [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(out), str(report)],
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
            timeout=_EXPORT_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise NsysFormatError(
            report,
            f"nsys export took over {_EXPORT_TIMEOUT_S // 60} min; export it yourself with nsys export --type sqlite",
        ) from None
    if done.returncode != 0 or not out.is_file():
        last = (done.stderr or done.stdout).strip().splitlines()
        raise NsysFormatError(
            report, f"nsys export failed: {last[-1] if last else f'exit {done.returncode}'}"
        )
    return out
