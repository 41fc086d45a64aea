"""Reading a Kineto Chrome-trace file: bytes (plain or gzip), then typed msgspec decoding.

A plain file is mapped read-only instead of read: its text then costs page cache, not the
process's own memory, and the native scan lets go of the pages it has passed
(:func:`dropped`), so a large file is never wholly resident next to its converted columns.

Every failure becomes a one-line :class:`KinetoFormatError` naming the file; files that are JSON
but not Kineto traces (PyTorch execution traces, memory timelines) are recognised and named.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import msgspec
import numpy as np
from msgspec import Raw, Struct

from profui.capture.conversion.errors import KinetoFormatError, undecodable
from profui.capture.format.regular import not_regular

from .inflater import InflateError, zlib
from .spill import spill, worth_spilling
from .timeparse import int_text

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer


class Event(Struct, gc=False):
    """One Chrome-trace event. ``ts``/``dur``/``args`` stay undecoded JSON text until needed:
    times must be converted exactly, and most metadata events' args are never read."""

    ph: str = ""
    cat: str | None = None
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: Raw = Raw()
    dur: Raw = Raw()
    args: Raw = Raw()
    id: Any = None  # any JSON value: only flows read it, and an odd one (float, bool, list) is not fatal


#: The top-level key whose value is the array of events.
EVENTS_KEY = "traceEvents"
_TOP_DECODER = msgspec.json.Decoder(dict[str, Raw])
# Events are split into raw items first and decoded one by one while converting: only one
# decoded event is alive at a time, which keeps peak memory near the size of the JSON text.
_EVENTS_DECODER = msgspec.json.Decoder(list[Raw])
event_decoder = msgspec.json.Decoder(Event)


class BatchEvent(Struct, gc=False):
    """:class:`Event` for decoding many events in one call. A missing ``dur`` reads as ``0``
    and missing ``args`` as ``{}``, as an event row treats them: the row columns are then
    pulled out in bulk without per-event checks. (Metadata events and side records, where a
    missing ``args`` differs from ``{}``, are decoded again as :class:`Event`.)"""

    ph: str = ""
    cat: str | None = None
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: Raw = Raw()
    dur: Raw = Raw(b"0")
    args: Raw = Raw(b"{}")
    id: Any = None  # any JSON value: only flows read it, and an odd one (float, bool, list) is not fatal


batch_decoder = msgspec.json.Decoder(list[BatchEvent])


@dataclass
class KinetoDoc:
    """A decoded Kineto trace: its events (as the JSON text of the ``traceEvents`` array, split
    into one item per event on demand) and every other top-level key (decoded)."""

    path: Path
    events_text: bytes | bytearray | memoryview | Raw | None
    metadata: dict[str, Any] = field(default_factory=dict)
    base_time_ns: int | None = None
    raw_bytes: int = 0
    mapped: bool = False  # events_text lies in a read-only file mapping (see read_bytes)
    _events: list[Raw] | None = None

    def event_list(self) -> list[Raw]:
        """The events, one undecoded JSON item each (split on first use)."""
        if self._events is None:
            try:
                self._events = _EVENTS_DECODER.decode(self.events_text or b"[]")
            except msgspec.ValidationError:
                raise KinetoFormatError(
                    self.path, "'traceEvents' is not a list: not a Kineto trace"
                ) from None
            except msgspec.DecodeError as exc:
                raise _json_error(self.path, exc) from None
        return self._events

    def is_empty(self) -> bool:
        """True when ``traceEvents`` is an empty list."""
        if self._events is not None:
            return not self._events
        head = bytes(memoryview(self.events_text or b"[]")[:256]).strip()
        return head.startswith(b"[") and head[1:].lstrip().startswith(b"]")

    def release(self) -> None:
        """Drop the events' text (after conversion) so its memory can be reused."""
        self.events_text = None
        self._events = None


def read_bytes(path: Path, spill_dir: Path | None = None) -> bytes | bytearray | memoryview:
    """The file's content, gunzipped when it is gzip; one-line errors for every way it can fail.
    A plain file comes as a view of a read-only mapping of it (:func:`is_mapped`); so does a
    large gzip file's text when ``spill_dir`` (a folder of the import) may hold it
    (:mod:`.spill`)."""
    problem = not_regular(path)
    if problem:
        raise KinetoFormatError(path, problem)
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
            if not head:
                raise KinetoFormatError(path, "empty file")
            if head == b"\x1f\x8b":
                fh.seek(0)
                compressed = fh.read()
                data: bytes | bytearray | memoryview | None = None
                stated = _stated_size(len(compressed), compressed[-4:])
                if spill_dir is not None and worth_spilling(spill_dir, stated):
                    data = spill(lambda write: inflate(path, compressed, write), spill_dir, stated)
                if data is None:
                    data = gunzip(path, compressed)
                if not data:
                    raise KinetoFormatError(path, "empty file (after gunzip)")
                return data
            try:
                return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
            except (OSError, ValueError):  # a file system that cannot map: read it
                fh.seek(0)
                return fh.read()
    except FileNotFoundError:
        raise KinetoFormatError(path, "no such file or directory") from None
    except IsADirectoryError:
        raise KinetoFormatError(
            path, "is a directory, expected a Kineto trace file (.json or .json.gz)"
        ) from None
    except PermissionError:
        raise KinetoFormatError(path, "permission denied") from None
    except OSError as exc:
        raise KinetoFormatError(path, f"cannot read file ({exc.strerror or exc})") from None


def text_size(path: Path) -> int:
    """Bytes of JSON text in ``path``: a gzip file's stated size (its last 4 bytes, modulo
    4 GiB, so never taken below the file's own size), else the file's size; 0 when unreadable."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return size
            fh.seek(-4, os.SEEK_END)
            return _stated_size(size, fh.read(4))
    except OSError:
        return 0


def _stated_size(size: int, tail: bytes) -> int:
    """A gzip file's text size as its last 4 bytes state it, never below the file's ``size``."""
    return max(size, int.from_bytes(tail, "little"))


def is_mapped(data: object) -> TypeGuard[memoryview]:
    """True when ``data`` is a view of a file mapping made by :func:`read_bytes`."""
    return isinstance(data, memoryview) and isinstance(data.obj, mmap.mmap)


def lies_in_mapping(text: ReadableBuffer, data: object) -> bool:
    """True when the bytes of ``text`` lie inside the file mapping ``data`` (:func:`is_mapped`):
    only such text may have its pages dropped (``madvise`` on memory of our own would zero it),
    so this is checked on the addresses, not assumed of the decoder."""
    if not is_mapped(data):
        return False
    at, size = address_of(text), len(memoryview(text))
    base = address_of(data)
    return base <= at and at + size <= base + len(data)


def address_of(buffer: ReadableBuffer) -> int:
    """The address of the first byte of ``buffer`` (0 when it is empty)."""
    view = memoryview(buffer)
    return np.frombuffer(view, np.uint8).ctypes.data if len(view) else 0


def dropped(data: object) -> None:
    """Let the pages of a mapped file's text (:func:`is_mapped`) go from this process's memory;
    they are read back from the page cache when touched again. Nothing for other data."""
    if is_mapped(data) and hasattr(mmap, "MADV_DONTNEED"):
        cast(mmap.mmap, data.obj).madvise(mmap.MADV_DONTNEED)  # is_mapped: a view of a mapping


def gunzip(path: Path, data: bytes) -> bytes | bytearray:
    """Decompress gzip ``data`` (all members) into memory, each member at once: the inflater
    grows its one output in place (decompressing into pieces and copying them into a buffer cost
    more than the inflating itself). A file of several members gathers them into one buffer as
    they come, each let go once copied, so no more than one member is held twice."""
    first: bytes | None = None
    joined: bytearray | None = None

    def write(text: bytes) -> None:
        nonlocal first, joined
        if not text:
            return
        if joined is None:
            if first is None:
                first = text
                return
            joined, first = bytearray(first), None
        joined += text

    inflate(path, data, write, piece=0)
    if joined is not None:
        return joined
    return first or b""


def inflate(path: Path, data: bytes, write: Callable[[bytes], Any], piece: int = 8 << 20) -> None:
    """Decompress gzip ``data`` (all members, read from ``path``) into ``write``, ``piece`` bytes
    at a time (0: a member at a time); a corrupt or truncated file is one line naming it."""
    view = memoryview(data)
    while len(view):
        dec = zlib.decompressobj(wbits=31)
        pending: bytes | memoryview = view
        try:
            while pending and not dec.eof:  # after the member's end the rest is unused_data
                write(dec.decompress(pending, piece))
                pending = dec.unconsumed_tail
            if not dec.eof:
                write(dec.flush())
        except InflateError as exc:
            raise KinetoFormatError(path, f"corrupt gzip file ({exc})") from None
        if not dec.eof:
            raise KinetoFormatError(path, "truncated gzip file (compressed data ends early)")
        rest = dec.unused_data.lstrip(b"\x00")
        if rest and rest[:2] != b"\x1f\x8b":
            raise KinetoFormatError(path, "corrupt gzip file (trailing garbage)")
        view = memoryview(rest)


def _json_error(path: Path, exc: Exception) -> KinetoFormatError:
    msg = str(exc)
    if "truncated" in msg.lower():
        return KinetoFormatError(path, "truncated JSON (the file ends in the middle of the trace)")
    return KinetoFormatError(path, f"not valid JSON ({msg})")


def decode(path: Path, data: bytes | bytearray | memoryview) -> KinetoDoc:
    """Decode Kineto JSON ``data`` read from ``path``; refuse anything that is not a Kineto trace."""
    if bytes(data[:3]) == b"\xef\xbb\xbf":
        data = memoryview(data)[
            3:
        ]  # a view: the text is not copied, and a scan ahead of it is of the same bytes
    first = bytes(data[:64]).lstrip()[:1]
    if first == b"[":
        return _decode_array(path, data)
    if first != b"{":
        raise KinetoFormatError(
            path,
            "not JSON: profui reads Kineto JSON (.json, .json.gz), JAX profiler traces (.trace.json.gz) "
            "and Nsight Systems exports (.sqlite, .nsys-rep)",
        )
    try:
        top = _TOP_DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raise _json_error(path, exc) from None
    except RecursionError:
        raise KinetoFormatError(path, "JSON nested too deeply to be a Kineto trace") from None
    raw_events = top.pop(EVENTS_KEY, None)
    if raw_events is None:
        raise KinetoFormatError(path, _what_instead(top))
    metadata = {}
    for key, raw in top.items():
        try:
            metadata[key] = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise KinetoFormatError(path, f"{key!r} holds {undecodable(exc)}") from None
    base_ns = None
    if "baseTimeNanoseconds" in top:
        try:
            base_ns = int_text(bytes(top["baseTimeNanoseconds"]))
        except ValueError as exc:
            raise KinetoFormatError(path, f"'baseTimeNanoseconds': {exc}") from None
    dropped(data)  # the decoder walked every page; the scan reads them again in order
    return KinetoDoc(
        path=path,
        events_text=raw_events,
        metadata=metadata,
        base_time_ns=base_ns,
        raw_bytes=len(data),
        mapped=lies_in_mapping(raw_events, data),
    )


def _decode_array(path: Path, data: bytes | bytearray | memoryview) -> KinetoDoc:
    # Chrome's "JSON array format": a bare list of events (no metadata). A list of lists is the
    # raw output of torch.profiler's export_memory_timeline instead.
    try:
        items = msgspec.json.decode(data, type=list[Raw])
    except msgspec.DecodeError as exc:
        raise _json_error(path, exc) from None
    head = bytes(items[0]).lstrip()[:1] if items else b""
    if head == b"[":
        raise KinetoFormatError(
            path,
            "a torch.profiler memory timeline (export_memory_timeline raw list of "
            "[time, action, bytes, category]), not a Kineto trace",
        )
    if head != b"{":
        raise KinetoFormatError(path, "a JSON list that is not a list of trace events: not a Kineto trace")
    dropped(data)
    return KinetoDoc(
        path=path,
        events_text=data,
        metadata={},
        base_time_ns=None,
        raw_bytes=len(data),
        mapped=is_mapped(data),
        _events=items,
    )


def _what_instead(top: Iterable[str]) -> str:
    keys = set(top)
    if "nodes" in keys and ("schema" in keys or "finish_ts" in keys):
        return "a PyTorch execution trace (top-level 'nodes'), not a Kineto trace; import the matching Kineto file"
    shown = ", ".join(sorted(keys)[:5]) or "none"
    return f"JSON object without 'traceEvents' (keys: {shown}): not a Kineto trace"
