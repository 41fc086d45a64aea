"""Telling, from its first bytes, a file of a folder that is named like a trace but is not one.

A folder of PyTorch Profiler output often holds other JSON beside the traces: an execution
trace recorded with them, a memory timeline, a tool's results. The folder scan
(:func:`profui.capture.ingest.sources.scan_folder`) skips those, saying why, instead of refusing
the whole folder. Only what the head proves is skipped: a file that may be a trace (its
``traceEvents`` not reached in the head, a damaged gzip stream) is left to its importer, which
refuses a damaged trace in one line naming it.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path
from typing import cast

from profui.capture.format.regular import not_regular

_HEAD = 256 << 10
_SPACE = re.compile(r"\s*")
_DECODER = json.JSONDecoder()
_NOT_JSON = "neither a JSON object nor a JSON list: not a trace profui reads"
_MEMORY_TIMELINE = (
    "a torch.profiler memory timeline (export_memory_timeline raw list of "
    "[time, action, bytes, category]), not a Kineto trace"
)
_NOT_EVENTS = "a JSON list that is not a list of trace events: not a Kineto trace"


def not_a_trace(path: Path) -> str | None:
    """Why the JSON file ``path`` (plain or gzip) is not a trace, when its first 256 KiB show it
    (an execution trace, a memory timeline, JSON without ``traceEvents``, not JSON, not a
    regular file); None when it may be one."""
    problem = not_regular(path)
    if problem:
        return problem
    try:
        with open(path, "rb") as fh:
            gzipped = fh.read(2) == b"\x1f\x8b"
        with gzip.open(path, "rb") if gzipped else open(path, "rb") as fh:
            head = fh.read(_HEAD)
            whole = not fh.read(1)
    except (OSError, EOFError, zlib.error):
        return None  # a damaged file: its importer names the problem
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    if not text:
        return None  # empty: its importer says so
    if text[0] == "[":
        first = text[1:].lstrip()[:1]
        if first == "[":
            return _MEMORY_TIMELINE
        return _NOT_EVENTS if first not in ("{", "]", "") else None
    if text[0] != "{":
        return _NOT_JSON
    keys, ended = _top_keys(text)
    if "traceEvents" in keys:
        return None
    if (ended and whole) or ("nodes" in keys and ("schema" in keys or "finish_ts" in keys)):
        from .reader import _what_instead  # the reader's words; it brings numpy, so only now

        return _what_instead(dict.fromkeys(keys))
    return None


def _after_space(text: str, at: int) -> int:
    """Where the white space from ``at`` on ends."""
    return cast("re.Match[str]", _SPACE.match(text, at)).end()  # \s* matches at every position


def _top_keys(text: str) -> tuple[list[str], bool]:
    """The keys of the JSON object ``text`` opens, in order, as far as ``text`` holds them and
    their values whole (up to ``traceEvents``, whose value is the trace), and whether the object
    ended within ``text``."""
    keys: list[str] = []
    at = 1
    while True:
        at = _after_space(text, at)
        if text.startswith("}", at):
            return keys, True
        try:
            key, at = _DECODER.raw_decode(text, at)
            at = _after_space(text, at)
            if not isinstance(key, str) or not text.startswith(":", at):
                return keys, False
            keys.append(key)
            if key == "traceEvents":
                return keys, False
            _, at = _DECODER.raw_decode(text, _after_space(text, at + 1))
        except (ValueError, RecursionError):  # the head ends inside a value, or it is not JSON
            return keys, False
        at = _after_space(text, at)
        if text.startswith(",", at):
            at += 1
        elif not text.startswith("}", at):
            return keys, False
