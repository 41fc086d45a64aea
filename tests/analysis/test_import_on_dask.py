"""``profui import`` on Dask: the files converted as tasks on a real cluster (a LocalCluster
started here, never a mock) give the trace a one-by-one import of the same files gives (the
oracle: every events table equal, the same manifest); two files of one rank are numbered as one
by one; a worker killed mid-import is survived; a broken file is one line naming it.

The many-rank sources are the real sampled ranks 0 and 1 relabelled (:mod:`ranksjob`).
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ranksjob import assert_same_trace, kineto_rank_files

from profui.analysis.cluster import TaskFailed, dask_client, import_mapper
from profui.capture.conversion.errors import KinetoFormatError
from profui.capture.format import TraceFormatError
from profui.capture.format.jobs import NotOneJob
from profui.capture.ingest import import_trace, importer, workers_for
from profui.capture.ingest.cache import WholeLine

from realdata import shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))
RANKS = 16


def profui(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROFUI, *map(str, args)], capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL
    )


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return kineto_rank_files(tmp_path_factory.mktemp("src"), RANKS)


@pytest.fixture(scope="module")
def one_by_one(sources: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The oracle: the same files imported one by one in this process."""
    out = tmp_path_factory.mktemp("seq") / "t"
    import_trace(sources, out)
    return out


@pytest.fixture(scope="module")
def client():
    with dask_client(workers=2) as c:
        yield c


def test_local_cluster_import_equals_one_by_one(
    sources: list[Path], one_by_one: Path, tmp_path: Path
) -> None:
    out = tmp_path / "par"
    res = profui("import", *sources, "-o", out, "--workers", "2")
    assert res.returncode == 0, res.stderr
    assert (
        f"imported {sum(pq.read_metadata(f).num_rows for f in one_by_one.rglob('*.parquet')):,} events"
        in res.stdout
    )
    assert res.stderr == ""
    assert_same_trace(out, one_by_one)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["par"]  # no task folders left beside it
    assert len(list(out.glob("node=*/rank=*"))) == RANKS


def test_two_files_of_one_rank_are_numbered_as_one_by_one(client, tmp_path: Path) -> None:
    """Two files of one node and rank (a trace without distributedInfo, twice, ``--node n``):
    the tasks write apart and the events files are numbered in the files' order."""
    src = shared_trace("hta-distributed_info_unavailable-distributed_info_not_found.json.gz")
    files = []
    for name in ("a", "b", "c"):
        files.append(tmp_path / f"{name}.json.gz")
        files[-1].write_bytes(src.read_bytes())
    import_trace(files, tmp_path / "seq", node="n")
    import_trace(files, tmp_path / "par", node="n", mapper=import_mapper(client))
    assert_same_trace(tmp_path / "par", tmp_path / "seq")
    entries = json.loads((tmp_path / "par" / "manifest.json").read_text())["sources"]
    assert [(Path(e["file"]).name, e["events_file"]) for e in entries] == [
        ("a.json.gz", "node=n/rank=0/events-00000.parquet"),
        ("b.json.gz", "node=n/rank=0/events-00001.parquet"),
        ("c.json.gz", "node=n/rank=0/events-00002.parquet"),
    ]


def test_killed_worker_during_import_is_survived(
    sources: list[Path], one_by_one: Path, tmp_path: Path
) -> None:
    """A worker process killed (SIGKILL) as the first file is done: Dask runs its task again on
    another worker and the import completes with the one-by-one trace."""
    with dask_client(workers=2) as c:
        pids = sorted(c.run(os.getpid).values())
        killed: list[tuple[int, int]] = []

        def progress(done: int, total: int) -> None:
            if not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append((done, total))

        import_trace(sources, tmp_path / "par", mapper=import_mapper(c), progress=progress)
        assert pids[0] not in c.run(os.getpid).values()
    assert killed and killed[0][0] < killed[0][1]  # killed with files still to convert
    assert_same_trace(tmp_path / "par", one_by_one)


def test_broken_file_is_one_line_and_nothing_is_written(sources: list[Path], tmp_path: Path) -> None:
    broken = tmp_path / "rank-99.json"
    broken.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "aten::mm", ')
    out = tmp_path / "out"
    res = profui("import", *sources[:3], broken, "-o", out, "--workers", "2")
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        f"profui: {broken}: truncated JSON (the file ends in the middle of the trace)"
    ]
    assert res.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank-99.json"]


def test_a_retried_task_starts_over(sources: list[Path], tmp_path: Path) -> None:
    """A task run again (its worker died after writing) leaves one events file, not two."""
    (tmp_path / "import").mkdir()
    job = (sources[0], tmp_path / "own", tmp_path / "import", None, None)
    first = importer._convert_apart(job)
    again = importer._convert_apart(job)
    assert [r.path for r in again] == [r.path for r in first]
    assert [p.name for p in (tmp_path / "own").rglob("*.parquet")] == ["events-00000.parquet"]


def test_a_task_outliving_its_import_leaves_nothing(sources: list[Path], tmp_path: Path) -> None:
    """A task that finishes after its import failed (its folder removed) removes its own."""
    importer._convert_apart((sources[0], tmp_path / "own", tmp_path / "gone", None, None))
    assert list(tmp_path.iterdir()) == []


def test_unfinished_task_names_its_file(client) -> None:
    def die(_item: object) -> None:
        os._exit(1)  # the worker process dies on every try

    with pytest.raises(TaskFailed, match=r"^/x/rank-3\.json\.gz did not finish"):
        list(import_mapper(client)(die, ["x"], ["/x/rank-3.json.gz"]))


def test_errors_arrive_from_another_process_as_themselves() -> None:
    for err in (
        TraceFormatError("/t/a.json", "empty file"),
        KinetoFormatError("/t/b.json", "truncated JSON"),
        NotOneJob(["a.json", "b.json"], "different hosts", "/t"),
        WholeLine("a.json, b.json: different hosts"),
    ):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err) and back.path == err.path


def test_default_is_one_by_one_unless_several_large_files(
    sources: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert workers_for(sources) == 1  # 16 files of 1 MB: a cluster would cost more than it saves
    assert workers_for(sources[:1]) == 1
    monkeypatch.setattr(importer, "AT_ONCE_BYTES", 1)
    monkeypatch.setattr(importer, "AT_ONCE_CORES", 1)
    assert workers_for(sources) == min(os.cpu_count() or 1, RANKS)
    assert workers_for(sources[:1]) == 1
    nsys = shared_trace("nsys/h100_2gpu_1s.sqlite")
    assert workers_for([*sources, nsys]) == 1  # an Nsight export's ranks follow the files before it


def test_small_import_never_imports_dask_or_polars(sources: list[Path], tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from profui.tui.cli.import_cmd import run_import; "
        f"run_import([Path(p) for p in {[str(s) for s in sources[:2]]!r}], Path({str(tmp_path / 't')!r}), "
        "None, None, False); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed', 'polars'}))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
