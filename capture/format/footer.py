"""A Parquet footer reader in plain Python: row count, top-level column names, key-value metadata.

Opening a trace only needs these three things from each file, and reading them without pyarrow
keeps pyarrow (about 0.2 s to import and 80 MB of memory) out of every process that only reads
traces (``profui summary``, the TUI; they read the data with Polars). The footer is Thrift's
compact protocol (parquet-format ``FileMetaData``); everything else in it is skipped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from .regular import not_regular

MAGIC = b"PAR1"

# Thrift compact protocol type ids
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)


class FooterError(ValueError):
    """The file is not a (complete) Parquet file."""


@dataclass(frozen=True)
class Footer:
    """What a reader needs from a Parquet footer."""

    num_rows: int
    columns: tuple[str, ...]  # top-level column names, in file order
    metadata: dict[bytes, bytes]  # key-value metadata (Arrow schema metadata lands here)


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def byte(self) -> int:
        try:
            b = self.buf[self.pos]
        except IndexError:
            raise FooterError("truncated footer") from None
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def advance(self, n: int) -> None:
        """Move past ``n`` bytes that must all be there."""
        if n < 0 or self.pos + n > len(self.buf):
            raise FooterError("truncated footer")
        self.pos += n

    def count(self, n: int, min_bytes: int = 1) -> int:
        """A list, set or map length read from the file, checked against the bytes left: each
        element takes at least ``min_bytes``, so a length the footer cannot hold is refused
        here (a crafted 2**60 would otherwise be looped over, element by element)."""
        if n < 0 or n * min_bytes > len(self.buf) - self.pos:
            raise FooterError(f"footer says {n} elements, more than its {len(self.buf)} bytes hold")
        return n

    def binary(self) -> bytes:
        n = self.varint()
        start = self.pos
        self.advance(n)
        return self.buf[start : self.pos]

    def field(self, last_id: int) -> tuple[int, int]:
        """(field id, type); type ``_STOP`` at the end of a struct."""
        head = self.byte()
        ftype = head & 0x0F
        if ftype == _STOP:
            return 0, _STOP
        delta = head >> 4
        return (last_id + delta if delta else self.zigzag()), ftype

    def list_header(self) -> tuple[int, int]:
        head = self.byte()
        size = head >> 4
        if size == 15:
            size = self.varint()
        return self.count(size), head & 0x0F

    def skip(self, ftype: int) -> None:
        if ftype in (_TRUE, _FALSE):
            return
        if ftype == _BYTE:
            self.advance(1)
        elif ftype in (_I16, _I32, _I64):
            self.varint()
        elif ftype == _DOUBLE:
            self.advance(8)
        elif ftype == _BINARY:
            self.advance(self.varint())
        elif ftype in (_LIST, _SET):
            size, etype = self.list_header()
            for _ in range(size):
                if etype in (_TRUE, _FALSE):
                    self.advance(1)  # booleans in a list take one byte each
                else:
                    self.skip(etype)
        elif ftype == _MAP:
            size = self.count(self.varint(), min_bytes=2)
            if size:
                kv = self.byte()
                for _ in range(size):
                    self.skip(kv >> 4)
                    self.skip(kv & 0x0F)
        elif ftype == _STRUCT:
            last = 0
            while True:
                last, t = self.field(last)
                if t == _STOP:
                    return
                self.skip(t)
        else:
            raise FooterError(f"bad Thrift type {ftype}")


def _schema_element(r: _Reader) -> tuple[str, int]:
    name, children, last = "", 0, 0
    while True:
        last, t = r.field(last)
        if t == _STOP:
            return name, children
        if last == 4 and t == _BINARY:
            name = _text(r.binary(), "column name")
        elif last == 5 and t == _I32:
            children = r.zigzag()
        else:
            r.skip(t)


def _text(raw: bytes, what: str) -> str:
    """``raw`` as text: Parquet's Thrift declares names and key-value metadata ``string``, UTF-8;
    Polars refuses a footer where they are not ("File out of specification: invalid utf8"), and
    every reader of ``profui.*`` metadata decodes it, so such a footer is refused here, once."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        shown = raw.decode("utf-8", "backslashreplace")[:60]
        raise FooterError(f"{what} is not UTF-8: {shown}") from None


def _key_value(r: _Reader) -> tuple[bytes, bytes]:
    key, value, last = b"", b"", 0
    while True:
        last, t = r.field(last)
        if t == _STOP:
            name = _text(key, "footer metadata key")
            _text(value, f"footer metadata {name}")
            return key, value
        if last == 1 and t == _BINARY:
            key = r.binary()
        elif last == 2 and t == _BINARY:
            value = r.binary()
        else:
            r.skip(t)


def parse_file_metadata(buf: bytes) -> Footer:
    """Decode a serialized ``FileMetaData`` (the footer without its length and magic)."""
    r = _Reader(buf)
    num_rows: int | None = None
    elements: list[tuple[str, int]] = []
    metadata: dict[bytes, bytes] = {}
    last = 0
    while True:
        last, t = r.field(last)
        if t == _STOP:
            break
        if last == 2 and t == _LIST:
            size, _ = r.list_header()
            elements = [_schema_element(r) for _ in range(size)]
        elif last == 3 and t == _I64:
            num_rows = r.zigzag()
        elif last == 5 and t == _LIST:
            size, _ = r.list_header()
            metadata = dict(_key_value(r) for _ in range(size))
        else:
            r.skip(t)
    if num_rows is None or not elements:
        raise FooterError("footer without row count or schema")
    # elements[0] is the root; its children follow depth first: keep the top level only
    columns: list[str] = []
    i = 1
    for _ in range(elements[0][1]):
        if i >= len(elements):
            raise FooterError("schema shorter than its root says")
        columns.append(elements[i][0])
        i = _skip_subtree(elements, i)
    return Footer(num_rows=num_rows, columns=tuple(columns), metadata=metadata)


def _skip_subtree(elements: list[tuple[str, int]], i: int) -> int:
    pending = 1
    while pending:
        if i >= len(elements):
            raise FooterError("schema shorter than its children say")
        pending += elements[i][1] - 1
        i += 1
    return i


def read_footer(path: str | Path) -> Footer:
    """Read a Parquet file's footer: ``FooterError`` when it is not a complete Parquet file,
    ``OSError`` (``PermissionError`` ...) when it cannot be read."""
    problem = not_regular(path)
    if problem:
        raise FooterError(problem)
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        if size < 12:
            raise FooterError(f"file of {size} bytes is too small to be Parquet")
        fh.seek(0)
        head = fh.read(4)
        fh.seek(size - 8)
        tail = fh.read(8)
        if head != MAGIC or tail[4:] != MAGIC:
            raise FooterError("no Parquet magic bytes (not Parquet, or truncated)")
        (length,) = struct.unpack("<i", tail[:4])
        if length <= 0 or length > size - 12:
            raise FooterError(f"bad footer length {length}")
        fh.seek(size - 8 - length)
        buf = fh.read(length)
    try:
        return parse_file_metadata(buf)
    except RecursionError:  # garbage that reads as endlessly nested structs
        raise FooterError("corrupt footer") from None
