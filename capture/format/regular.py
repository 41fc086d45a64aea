"""Which paths can be read as files: a FIFO, a device or a socket cannot (opening one blocks, or
reads forever), so every reader of user input asks here first."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def not_regular(path: str | Path) -> str | None:
    """Why ``path`` is not a file a reader may open (``"is a FIFO, not a regular file"``), or
    None when it is a regular file, a directory, or cannot be stat'ed (the open that follows
    then says what is wrong, as it always did)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        kind = "a FIFO"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a device"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    else:
        kind = "not a file"
    return f"is {kind}, not a regular file"


def not_utf8(path: str | Path) -> str | None:
    """Why ``path`` cannot hold a trace (its name is not valid UTF-8: Polars and Arrow cannot
    open files under it), or None."""
    try:
        os.fsencode(os.fspath(path)).decode("utf-8")
    except UnicodeDecodeError:
        return (
            "path is not valid UTF-8, which the Parquet readers cannot open; "
            "rename it, or use it through a symlink with a UTF-8 name"
        )
    return None
