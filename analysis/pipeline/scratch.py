"""Where a files stage run in memory writes: a folder of this process, gone when it ends.

A recorded run moves a files stage's outputs into its artifact folder; a run in memory (a
running capture) keeps them where the stage wrote them, for as long as the process reads them.
Each process has one folder under ``trace/.profui/scratch/`` (the private folder: on the
trace's disk, or profui's cache for a read-only trace), removed at exit; a folder whose process
was killed is removed by the next process that makes one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from profui.capture.format.liveness import pid_alive, this_host

SCRATCH = "scratch"

_MINE: dict[Path, Path] = {}


def _owner(folder: Path) -> tuple[int, str] | None:
    """(pid, host) of a process folder's name ``<pid>@<host>``, or None when not one."""
    pid, at, host = folder.name.partition("@")
    return (int(pid), host) if at and pid.isdigit() else None


def _remove_orphans(root: Path, host: str) -> None:
    """Delete the folders of this machine's processes that are gone (killed before their exit)."""
    for folder in root.iterdir() if root.is_dir() else ():
        owner = _owner(folder)
        if owner is not None and owner[1] == host and owner[0] != os.getpid() and not pid_alive(owner[0]):
            shutil.rmtree(folder, ignore_errors=True)


def _process_folder(private_dir: Path) -> Path:
    """This process's scratch folder for traces whose private folder is ``private_dir``; made
    (and registered for removal at exit) on first use; in the system's temporary folder when
    the private folder cannot be written."""
    mine = _MINE.get(private_dir)
    if mine is not None and mine.is_dir():
        return mine
    host = this_host()
    root = private_dir / SCRATCH
    try:
        root.mkdir(parents=True, exist_ok=True)
        _remove_orphans(root, host)
        mine = root / f"{os.getpid()}@{host}"
        mine.mkdir(exist_ok=True)
    except OSError:
        mine = Path(tempfile.mkdtemp(prefix="profui-scratch-"))
    _MINE[private_dir] = mine
    atexit.register(shutil.rmtree, mine, True)
    return mine


def process_scratch(private_dir: Path, stage: str) -> Path:
    """A new empty folder for one run of files stage ``stage`` in memory (see the module); the
    stage's earlier folder of this process is removed (a running capture's timeline, opened
    again as it grows, keeps one index on disk, not one per opening: its reader has mapped or
    read what it holds, and the mapping outlives the file)."""
    mine = _process_folder(private_dir)
    for old in mine.glob(f"{stage}-*"):
        shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{stage}-", dir=mine))
