"""Content-addressed stage outputs under ``TRACE/.profui/artifacts/<stage>/<key>/``.

The key hashes what determines a stage's output: stage name, code version, the parameters it
uses and the hashes of its input artifacts. An artifact folder is built under a temporary name
and renamed into place when complete, so a reader never sees half an output.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import msgspec

from profui.capture.format.regular import not_regular

from .records import RunId, Scalar

META = "meta.json"
ARTIFACTS = "artifacts"


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "to_json_dict"):
        return obj.to_json_dict()
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def canonical_json(data: Any) -> bytes:
    """Stable JSON bytes (sorted keys) used both for files and for hashing."""
    return json.dumps(data, sort_keys=True, indent=1, default=_json_default, allow_nan=True).encode()


def digest(data: Any) -> str:
    """Short sha256 of the canonical JSON of ``data``."""
    return hashlib.sha256(canonical_json(data)).hexdigest()[:20]


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def trace_key(trace_dir: Any) -> str:
    """What a run keys the trace's files by (an opened TraceDir's fingerprint, digested): the
    ingest stage's input, and what a reader compares to tell its outputs are of the files now."""
    from profui.capture.format import trace_fingerprint

    return digest(trace_fingerprint(trace_dir))


#: Bump when the artifact layout or the meaning of keys changes: every cached output is then stale.
ENGINE_VERSION = 1


def artifact_key(stage: str, code_version: str, params: Mapping[str, Any], inputs: Mapping[str, str]) -> str:
    """The cache key of one stage computation.

    Besides the stage's code version, parameters and input hashes it covers the engine's and
    Polars' versions: a Polars upgrade may change what the same code computes.
    """
    import polars as pl

    return digest(
        {
            "stage": stage,
            "code": code_version,
            "params": dict(params),
            "inputs": dict(inputs),
            "engine": ENGINE_VERSION,
            "polars": pl.__version__,
        }
    )


def artifacts_root(private_dir: Path) -> Path:
    """``TRACE/.profui/artifacts``."""
    return private_dir / ARTIFACTS


def artifact_dir(private_dir: Path, stage: str, key: str) -> Path:
    """Folder of one stage output."""
    return artifacts_root(private_dir) / stage / key


FileName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")]
Sha256 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]


# Closed schema of scalars below its declared containers: decoding checks every type and never
# descends into nesting deeper than its own (an unknown field is refused, not skipped unread).
class ArtifactMeta(msgspec.Struct, forbid_unknown_fields=True):
    """The ``meta.json`` of an artifact folder: its output files' sha256 and sizes, the hash of
    those hashes (what downstream keys use) and what made it (run, code version, parameters and
    inputs of a stage; the rank of a rank's tables)."""

    stage: str
    key: str
    outputs: dict[FileName, Sha256]
    sizes: dict[FileName, Annotated[int, msgspec.Meta(ge=0)]]
    output_hash: str
    run: RunId | None = None  # becomes a run record's origin_run: of the same type
    created: str | None = None
    code_version: str | None = None
    params: dict[str, Scalar] = {}
    inputs: dict[str, str] = {}
    rank: str | None = None
    #: Each output file's (inode, size, mtime, ctime) when its sha256 was taken (:func:`verify`)
    signatures: dict[FileName, tuple[int, int, int, int]] = {}
    #: A files stage's (:attr:`.dag.Stage.files`): its outputs are handed on as paths, never read
    files: bool = False

    def __post_init__(self) -> None:
        if set(self.outputs) != set(self.sizes):
            raise ValueError("outputs and sizes list different files")
        if self.signatures and set(self.signatures) != set(self.outputs):
            raise ValueError("outputs and signatures list different files")


_DECODE_META = msgspec.json.Decoder(ArtifactMeta).decode


def _meta_bytes(folder: Path) -> bytes | None:
    path = folder / META
    if not_regular(path) is not None:  # a FIFO would block the read
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def _decode_meta(data: bytes) -> ArtifactMeta | None:
    try:
        return _DECODE_META(data)
    except (msgspec.MsgspecError, RecursionError):
        return None


def read_meta(folder: Path) -> ArtifactMeta | None:
    """The ``meta.json`` of an artifact folder, or None when absent, unreadable or not one."""
    data = _meta_bytes(folder)
    return None if data is None else _decode_meta(data)


# Folders whose files matched their sha256, with what they were when hashed: meta.json's bytes
# and each output's (inode, size, mtime, ctime). A write, a truncation or a replacement changes
# the ctime (which no user can set back), so an unchanged signature means unchanged bytes and a
# process hashes each output once, not at every read of the store. The writer records the
# signatures it hashed in the meta too, so another process trusts them the same way: a warm
# open of a 10M-event timeline would otherwise hash its ~600 MB of arrays first. A copy of the
# folder (new inodes) is hashed once again, and its meta rewritten with the copy's identities
# (where it can be written). What no write shows (a disk's bit rot) is no longer caught by the
# next process's hash: the disk's and file system's checksums are left to catch it.
_VERIFIED: dict[Path, tuple[bytes, tuple[tuple[int, int, int, int], ...]]] = {}


def _signature(folder: Path, meta: ArtifactMeta) -> tuple[tuple[int, int, int, int], ...] | None:
    """Each output file's identity, or None when one is missing, not a regular file or not of
    its recorded size."""
    out = []
    for name, size in sorted(meta.sizes.items()):
        try:
            st = os.stat(folder / name)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size != size:
            return None
        out.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


def _recorded_signature(meta: ArtifactMeta) -> tuple[tuple[int, int, int, int], ...] | None:
    """The files' identities when they were hashed, as the meta records them (in
    :func:`_signature`'s order), or None when it records none (an older artifact)."""
    if not meta.signatures:
        return None
    return tuple(tuple(meta.signatures[name]) for name in sorted(meta.sizes))  # type: ignore[misc]


def _remember(folder: Path, data: bytes, meta: ArtifactMeta) -> None:
    sig = _signature(folder, meta)
    if sig is not None:
        _VERIFIED[folder] = (data, sig)


def verify(folder: Path) -> ArtifactMeta | None:
    """Meta of ``folder`` if every output file it lists is there with its recorded size and
    sha256; None otherwise (a damaged output is a miss, never served)."""
    data = _meta_bytes(folder)
    meta = None if data is None else _decode_meta(data)
    if meta is None or data is None:
        return None
    sig = _signature(folder, meta)
    if sig is None:
        return None
    if _VERIFIED.get(folder) == (data, sig) or sig == _recorded_signature(meta):
        return meta
    for name, sha in meta.outputs.items():
        try:
            if file_sha256(folder / name) != sha:
                return None
        except OSError:
            return None
    _VERIFIED[folder] = (data, sig)
    if _signature(folder, meta) == sig:  # unchanged while hashed: the next process trusts them
        _record_signatures(folder, meta, sig)
    return meta


def _record_signatures(folder: Path, meta: ArtifactMeta, sig: tuple[tuple[int, int, int, int], ...]) -> None:
    """Rewrite ``folder``'s meta.json with the files' identities as just hashed (a copied folder's
    new inodes), atomically; silently nothing where the folder cannot be written."""
    from profui.capture.format.atomic import write_bytes_atomic

    doc = msgspec.to_builtins(meta)
    doc["signatures"] = dict(zip(sorted(meta.sizes), sig, strict=True))
    data = canonical_json(doc) + b"\n"
    with contextlib.suppress(OSError):
        write_bytes_atomic(folder / META, data, fsync=False)
        _VERIFIED[folder] = (data, sig)


def _is_arrow_table(value: Any) -> bool:
    # pyarrow is loaded only when a stage made an Arrow table (so it is loaded already): reading
    # cached outputs (a warm ``profui open``) never pays pyarrow's and numpy's import time.
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(value, pa.Table)


def _write_output(path: Path, value: Any) -> None:
    import polars as pl

    if isinstance(value, Path):  # a file a files stage wrote in its scratch folder (same disk)
        os.replace(value, path)
    elif path.suffix == ".parquet":
        if isinstance(value, pl.LazyFrame):
            value = value.collect()
        if isinstance(value, pl.DataFrame):
            value.write_parquet(path, compression="zstd", statistics=True)
        elif _is_arrow_table(value):
            import pyarrow.parquet as pq

            pq.write_table(value, path, compression="zstd")
        else:
            raise TypeError(
                f"{path.name}: a Parquet output must be a Polars or Arrow table, got {type(value).__name__}"
            )
    elif path.suffix == ".json":
        path.write_bytes(canonical_json(value) + b"\n")
    else:
        raise TypeError(f"{path.name}: outputs are .parquet or .json")


def write_artifact(
    private_dir: Path,
    stage: str,
    key: str,
    outputs: Mapping[str, Any],
    declared: tuple[str, ...],
    meta: Mapping[str, Any],
    replace: bool = False,
) -> ArtifactMeta:
    """Write a stage's outputs into its artifact folder atomically; return the completed meta.

    ``outputs`` must hold exactly the ``declared`` file names; a value that is a path is a file
    already written (a files stage's), moved in. The files are written into a
    temporary folder beside the final one, hashed, described in ``meta.json`` and the folder is
    renamed into place. A complete artifact already there under the same key is kept unless
    ``replace`` (a forced recomputation); a damaged one is always replaced.
    """
    got, want = set(outputs), set(declared)
    if got != want:
        raise ValueError(f"stage {stage} returned outputs {sorted(got)}, declared {sorted(want)}")
    final = artifact_dir(private_dir, stage, key)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=final.parent))
    try:
        hashes: dict[str, str] = {}
        sizes: dict[str, int] = {}
        signatures: dict[str, tuple[int, int, int, int]] = {}
        for name in declared:
            p = tmp / name
            _write_output(p, outputs[name])
            before = os.stat(p)
            hashes[name] = file_sha256(p)
            st = os.stat(p)
            sizes[name] = st.st_size
            if (before.st_mtime_ns, before.st_ctime_ns) == (st.st_mtime_ns, st.st_ctime_ns):
                signatures[name] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        full = dict(meta)
        full.update(
            {
                "stage": stage,
                "key": key,
                "outputs": hashes,
                "sizes": sizes,
                "output_hash": digest(hashes),
                # every file's, or none: one written while hashed is hashed again by a reader
                "signatures": signatures if len(signatures) == len(hashes) else {},
            }
        )
        data = canonical_json(full) + b"\n"
        written = _DECODE_META(data)  # what it says is what a reader will decode
        (tmp / META).write_bytes(data)
        if final.exists():
            existing = verify(final)
            if existing is not None and not replace:
                shutil.rmtree(tmp, ignore_errors=True)
                return existing
            old = final.parent / f".tmp-old-{key}-{os.getpid()}"
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final)
        _remember(final, data, written)  # just hashed: a read by this process need not again
        return written
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def scratch_dir(parent: Path, key: str) -> Path:
    """A new empty folder in ``parent`` (a stage's folder of artifacts: the same disk, so its
    files move into the artifact folder without a copy) for a files stage to write in; named
    as a temporary, so one a killed run leaves is removed with the others."""
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".tmp-scratch-{key}-", dir=parent))


def remove_temporaries(private_dir: Path) -> int:
    """Delete half-built artifact folders left by a killed process; return how many."""
    root = artifacts_root(private_dir)
    n = 0
    if root.is_dir():
        for stage_dir in root.iterdir():
            if stage_dir.is_dir():
                for d in stage_dir.glob(".tmp-*"):
                    with contextlib.suppress(OSError):
                        shutil.rmtree(d)
                        n += 1
    return n


def load_file(path: Path) -> Any:
    """Read one output file: a Polars DataFrame for Parquet, the parsed value for JSON (the
    summary stage's ``summary.json`` a :class:`~profui.analysis.summary_document.Summary`)."""
    return load_files([path])[path]


def _read_json(path: Path) -> Any:
    """A JSON output's value: the parsed document, or the object the stage wrote where the
    document is one's (``summary/summary.json``: the Summary, as the stage returned it)."""
    doc = json.loads(path.read_bytes())
    if path.name == "summary.json" and path.parent.parent.name == "summary":  # artifacts/<stage>/<key>/
        from ..summary_document import Summary

        return Summary.from_json_dict(doc, path)
    return doc


def read_outputs(found: Mapping[str, tuple[Path, ArtifactMeta]]) -> dict[str, dict[str, Any]]:
    """``{stage: {output file: value}}`` of ``{stage: (artifact folder, its meta)}``: tables and
    documents read (every Parquet file in one go, :func:`load_files`), a files stage's outputs
    (its meta says so) as their paths: the one rule of what a reader gets."""
    paths = {s: [folder / n for n in meta.outputs] for s, (folder, meta) in found.items()}
    read = load_files([p for s, ps in paths.items() if not found[s][1].files for p in ps])
    return {s: {p.name: p if found[s][1].files else read[p] for p in ps} for s, ps in paths.items()}


def load_files(paths: list[Path]) -> dict[Path, Any]:
    """Read output files, as :func:`load_file` does each: Parquet files all at once, in one
    ``collect_all``. One call, not one per file, because a reading thread hands the interpreter
    lock to the UI thread and waits for it back at every call; across the fifty files of a
    dashboard that wait, not the reading, was most of a warm open."""
    import polars as pl  # here, not at the top: listing runs (`profui runs`) reads no frames

    parquet = [p for p in paths if p.suffix == ".parquet"]
    frames = pl.collect_all([pl.scan_parquet(p) for p in parquet]) if parquet else []
    out: dict[Path, Any] = dict(zip(parquet, frames, strict=True))
    for p in paths:
        if p.suffix != ".parquet":
            out[p] = _read_json(p)
    return {p: out[p] for p in paths}
