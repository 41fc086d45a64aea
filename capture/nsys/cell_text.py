"""How a cell of an Nsight Systems export is read as text: the one rule, shared by the export's
reader (:mod:`.tables`) and the converter's columns (:mod:`.arrays`). Standard library only."""

from __future__ import annotations

from typing import overload


@overload
def text(value: bytes) -> str: ...
@overload
def text(value: object) -> object: ...
def text(value: object) -> object:
    """A cell as the export means it: a BLOB where Nsight writes text (a process's name) is its
    UTF-8 text, so that it reaches the trace as a name, never as bytes."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
