"""Names and places of the files inside a trace directory."""

from __future__ import annotations

import os
import re
from pathlib import Path

MANIFEST_NAME = "manifest.json"
#: Folder owned by analysis (cache, run records); never read as trace data.
PRIVATE_DIR = ".profui"

_EVENTS_RE = re.compile(r"^events-(\d+)\.parquet$")
_METRICS_RE = re.compile(r"^metrics-(\d+)\.parquet$")
_SAFE_NODE_RE = re.compile(r"[^A-Za-z0-9._-]")


def default_cache_root() -> Path:
    """profui's cache outside any trace, by the XDG base-directory rule: ``$PROFUI_CACHE``, else
    ``$XDG_CACHE_HOME/profui`` when that is set to an absolute path, else ``~/.cache/profui``.

    Its folders, each named by one function below: :func:`imports_dir`, :func:`combined_dir`,
    :func:`traces_dir`, :func:`baselines_dir` and :func:`locks_dir`.
    """
    env = os.environ.get("PROFUI_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # the specification: a relative path in an XDG variable is invalid and ignored
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "profui"


def _root(cache_root: str | Path | None) -> Path:
    return Path(cache_root).expanduser() if cache_root is not None else default_cache_root()


def imports_dir(cache_root: str | Path | None = None) -> Path:
    """``<cache root>/imports/``: foreign trace files (Kineto, Nsight, JAX) imported once, one
    entry per set of sources; ``cache_root`` defaults to :func:`default_cache_root`."""
    return _root(cache_root) / "imports"


def combined_dir(cache_root: str | Path | None = None) -> Path:
    """``<cache root>/combined/``: several trace folders of one job (a folder per node) opened as
    one trace, one entry per set of folders; ``cache_root`` defaults to :func:`default_cache_root`."""
    return _root(cache_root) / "combined"


def traces_dir(cache_root: str | Path | None = None) -> Path:
    """``<cache root>/traces/``: the private folders of traces that cannot be written (see
    :func:`private_dir_for`); ``cache_root`` defaults to :func:`default_cache_root`."""
    return _root(cache_root) / "traces"


def baselines_dir(cache_root: str | Path | None = None) -> Path:
    """``<cache root>/baselines/``: the profiles ``profui diff --save-baseline`` keeps by name;
    ``cache_root`` defaults to :func:`default_cache_root`."""
    return _root(cache_root) / "baselines"


def locks_dir(cache_root: str | Path | None = None) -> Path:
    """``<cache root>/locks/``: the lock files of the cache's entries, beside the entries'
    folders, which hold entries only; ``cache_root`` defaults to :func:`default_cache_root`."""
    return _root(cache_root) / "locks"


def private_dir_for(trace_path: Path) -> Path:
    """Where everything profui derives from a trace is kept: the one cache store.

    ``trace/.profui/`` (stage outputs, run records, the timeline index) when the trace folder
    can be written, else — a shared, read-only trace — ``<cache root>/traces/<hash of its
    path>/``, so a read-only trace is analysed and indexed once, like any other.
    """
    private = trace_path / PRIVATE_DIR
    if os.access(private if private.exists() else trace_path, os.W_OK):
        return private
    import hashlib  # here: hashlib loads OpenSSL (3.6 MB resident) into every process that writes a trace

    key = hashlib.sha256(str(trace_path.resolve()).encode()).hexdigest()[:24]
    return traces_dir() / key


def safe_node_name(host: str) -> str:
    """A host name usable as a ``node=`` folder value (no ``/``, ``=`` or spaces)."""
    cleaned = _SAFE_NODE_RE.sub("_", host.strip()) or "localhost"
    return cleaned


def node_dir(trace_dir: str | Path, node: str) -> Path:
    """``trace/node=<host>/``."""
    return Path(trace_dir) / f"node={safe_node_name(node)}"


def rank_dir(trace_dir: str | Path, node: str, rank: int) -> Path:
    """``trace/node=<host>/rank=<r>/``."""
    return node_dir(trace_dir, node) / f"rank={int(rank)}"


def events_path(trace_dir: str | Path, node: str, rank: int, seq: int) -> Path:
    """Path of the ``seq``-th events file of one rank."""
    return rank_dir(trace_dir, node, rank) / f"events-{int(seq):05d}.parquet"


def metrics_path(trace_dir: str | Path, node: str, seq: int) -> Path:
    """Path of the ``seq``-th metrics file of one node."""
    return node_dir(trace_dir, node) / f"metrics-{int(seq):05d}.parquet"


def manifest_path(trace_dir: str | Path) -> Path:
    """``trace/manifest.json``."""
    return Path(trace_dir) / MANIFEST_NAME


def next_seq(folder: Path, table: str) -> int:
    """The next free sequence number for ``table`` files in ``folder``."""
    pattern = _EVENTS_RE if table == "events" else _METRICS_RE
    if not folder.is_dir():
        return 0
    seqs = [int(m.group(1)) for p in folder.iterdir() if (m := pattern.match(p.name))]
    return max(seqs, default=-1) + 1


def adopt_events(file: Path, trace_dir: str | Path, node: str, rank: int) -> Path:
    """Move the events file ``file`` (written elsewhere on the same file system, e.g. by a
    worker process into a folder of its own) into ``trace_dir`` as ``node``/``rank``'s next
    events file; returns its new path."""
    folder = rank_dir(trace_dir, node, rank)
    dest = events_path(trace_dir, node, rank, next_seq(folder, "events"))
    folder.mkdir(parents=True, exist_ok=True)
    os.replace(file, dest)
    return dest


def parse_partition(part: str, key: str) -> str | None:
    """Value of a ``key=value`` folder name, or None when ``part`` is not one."""
    prefix = f"{key}="
    return part[len(prefix) :] if part.startswith(prefix) else None


def is_events_file(name: str) -> bool:
    """True for ``events-<seq>.parquet``."""
    return bool(_EVENTS_RE.match(name))


def is_metrics_file(name: str) -> bool:
    """True for ``metrics-<seq>.parquet``."""
    return bool(_METRICS_RE.match(name))
