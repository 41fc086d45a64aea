"""The one code-version key (capture/format/code_version.py), checked on profui's own modules.

The key is computed in a fresh interpreter over a copy of profui's packages, edited for real:
an edit of a module the key covers changes it, an edit of any other module or a new
modification time does not. Which modules it covers is checked against Python's own import
system: importing a module loads no profui module outside its closure.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from profui.capture.format.code_version import closure

from realdata import REPO, shared_trace

LOD = "profui.analysis.lod"


@pytest.fixture(scope="module")
def profui_copy(tmp_path_factory) -> Path:
    """A copy of profui's three packages, as a namespace package ``profui`` in a folder of its own."""
    root = tmp_path_factory.mktemp("code") / "site"
    for folder in ("capture", "analysis", "tui"):
        shutil.copytree(REPO / folder, root / "profui" / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _keys(site: Path, *modules: str) -> dict[str, str]:
    """``code_version((m,))`` of each of ``modules``, computed by the copy at ``site``."""
    code = (
        "import json, sys\n"
        "from profui.capture.format import code_version as c\n"
        "assert c.__file__.startswith(sys.argv[1]), c.__file__\n"
        "print(json.dumps({m: c.code_version((m,)) for m in sys.argv[2:]}))\n"
    )
    return json.loads(_run_in(site, code, *modules))


def _run_in(site: Path, code: str, *args: str) -> str:
    """What ``code`` prints, run by a fresh interpreter on the copy at ``site`` (``sys.argv[1]``
    is ``site``, then ``args``)."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = subprocess.run(
        [sys.executable, "-c", code, str(site), *args], env=env, capture_output=True, text=True, check=True
    )
    return run.stdout


def _append(path: Path, text: str) -> None:
    with open(path, "a") as fh:
        fh.write(text)


def test_an_edit_changes_the_keys_of_the_modules_that_load_it_and_no_other(profui_copy):
    site = profui_copy / "profui"
    inventory, timeline = "profui.analysis.inventory", "profui.tui.timeline.render"
    before = _keys(profui_copy, LOD, inventory, timeline)
    # steps: a module lod loads through one it imports (allocations)
    assert "profui.analysis.steps" in closure([LOD]) and "profui.analysis.steps" not in closure([inventory])
    _append(site / "analysis" / "steps.py", "\nSTEPS_EDITED = 1\n")
    after = _keys(profui_copy, LOD, inventory, timeline)
    assert after[LOD] != before[LOD] and after[timeline] != before[timeline]  # the timeline reads lod
    assert after[inventory] == before[inventory]
    # a module the timeline loads and lod does not
    assert "profui.tui.timeline.state" in closure([timeline]) and "profui.tui.timeline.state" not in closure(
        [LOD]
    )
    _append(site / "tui" / "timeline" / "state.py", "\nSTATE_EDITED = 1\n")
    again = _keys(profui_copy, LOD, timeline)
    assert again[LOD] == after[LOD] and again[timeline] != after[timeline]
    # the same bytes with a new modification time (a fresh checkout) are the same code
    for p in (site / "analysis").glob("*.py"):
        os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10**9))
    assert _keys(profui_copy, LOD) == {LOD: again[LOD]}


def test_a_name_taken_from_a_lazy_package_counts_the_module_that_holds_it(profui_copy):
    # the pipeline's engine takes trace_fingerprint from profui.capture.format, which loads it
    # from fingerprint.py on first use (capture/format/__init__.py's TYPE_CHECKING imports say
    # where); the timeline's index, which took it too, is keyed as a stage now
    engine = "profui.analysis.pipeline.engine"
    assert "profui.capture.format.fingerprint" in closure([engine])
    assert "profui.capture.format.jobs" not in closure([engine])  # named there too, used by none of it
    before = _keys(profui_copy, engine)
    _append(profui_copy / "profui" / "capture" / "format" / "fingerprint.py", "\nFP_EDITED = 1\n")
    assert _keys(profui_copy, engine) != before


@pytest.mark.parametrize(
    "module",
    [LOD, "profui.analysis.inventory", "profui.analysis.pipeline.bodies", "profui.tui.timeline.render"],
)
def test_importing_a_module_loads_nothing_outside_its_closure(module):
    """Python's import system is the oracle: every profui module (with a file) that importing
    ``module`` loads is in its closure."""
    code = (
        "import importlib, json, sys\n"
        "importlib.import_module(sys.argv[1])\n"
        "print(json.dumps(sorted(k for k, m in sys.modules.items()"
        " if k.startswith('profui.') and getattr(m, '__file__', None))))\n"
    )
    run = subprocess.run([sys.executable, "-c", code, module], capture_output=True, text=True, check=True)
    loaded = set(json.loads(run.stdout))
    assert module in loaded
    assert loaded - closure([module]) == set()


def _import_in(site: Path, source: Path, cache: Path) -> dict[str, str]:
    """Resolve ``source`` through the import cache at ``cache`` with the copy at ``site``: the
    entry's path and the code version its done mark names."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from profui.capture.ingest import cache\n"
        "assert cache.__file__.startswith(sys.argv[1]), cache.__file__\n"
        "out = cache.resolve_trace(Path(sys.argv[2]), cache_root=sys.argv[3])\n"
        "mark = json.loads((out / '.profui-import.json').read_text())\n"
        "print(json.dumps({'entry': str(out), 'code': mark['code'], 'now': cache.import_code()}))\n"
    )
    return json.loads(_run_in(site, code, str(source), str(cache)))


def test_an_import_made_by_other_converter_code_is_made_again_in_its_place(profui_copy, tmp_path):
    # The import cache keyed on the sources alone served an import made by an older converter
    # after an upgrade; an entry now names the importing code's version, and an entry another
    # version made is imported again under the same key (not beside it: the cache does not grow).
    source = tmp_path / "rank0.json"
    shutil.copy(shared_trace("hta-call_stack-backward_thread.json"), source)
    cache = tmp_path / "cache"
    first = _import_in(profui_copy, source, cache)
    assert first["code"] == first["now"]
    entry = Path(first["entry"])
    made = (entry / "manifest.json").stat().st_mtime_ns
    assert _import_in(profui_copy, source, cache) == first  # the same code and sources: served
    assert (entry / "manifest.json").stat().st_mtime_ns == made
    # code the import never runs (the timeline's view) leaves the entry as it is
    assert "profui.tui.timeline.view" not in closure(["profui.capture.ingest.importer"])
    _append(profui_copy / "profui" / "tui" / "timeline" / "view.py", "\nVIEW_EDITED = 1\n")
    assert _import_in(profui_copy, source, cache) == first
    # the Nsight converter, which the importer loads inside the function that dispatches to it
    assert "profui.capture.nsys.convert" in closure(["profui.capture.ingest.importer"])
    _append(profui_copy / "profui" / "capture" / "nsys" / "convert.py", "\nCONVERT_EDITED = 1\n")
    again = _import_in(profui_copy, source, cache)
    assert again["entry"] == first["entry"] and again["code"] == again["now"] != first["code"]
    assert (entry / "manifest.json").stat().st_mtime_ns != made  # imported again
    assert [e.name for e in entry.parent.iterdir() if not e.name.startswith(".")] == [entry.name]


def test_modules_without_files_are_keyed_by_the_installed_version(tmp_path):
    """profui run from a zip (a zipapp, a wheel without sources): no module has a file to read,
    so the key is the modules' names and the installed distribution's version, computed here
    by hand from the documented rule; another version gives another key."""
    archive = tmp_path / "profui.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("profui/", "")  # zipimport finds a package, namespace or not, by its folder's entry
        for folder in ("capture", "analysis"):
            for path in sorted((REPO / folder).rglob("*")):
                if "__pycache__" not in path.parts and (path.is_dir() or path.suffix == ".py"):
                    zf.write(path, f"profui/{path.relative_to(REPO)}")
    keys = {}
    for version in ("9.9.9", "9.9.10"):
        dist = tmp_path / version / f"profui-{version}.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: profui\nVersion: {version}\n\n")
        code = (
            "import json, sys\n"
            "from profui.capture.format import code_version as c\n"
            "assert c.__file__.startswith(sys.argv[1]), c.__file__\n"
            "print(json.dumps(c.code_version([sys.argv[2]])))\n"
        )
        env = {**os.environ, "PYTHONPATH": f"{dist.parent}{os.pathsep}{archive}"}
        run = subprocess.run(
            [sys.executable, "-c", code, str(archive), LOD],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp_path,  # not a checkout, whose profui.egg-info would be found first
        )
        keys[version] = json.loads(run.stdout)
        expected = hashlib.sha256(f"{LOD}\0-\0version\0{version}".encode()).hexdigest()[:24]
        assert keys[version] == expected
    assert keys["9.9.9"] != keys["9.9.10"]


def test_an_unreadable_module_file_misses_rather_than_fails(tmp_path):
    """A file of the closure that cannot be read (mid-upgrade) does not fail the key: it counts by
    its name and a mark no file's bytes give, so the key differs from the readable file's, and
    is the readable file's again once it can be read. Root reads any file whatever its mode, so
    as root the keys are computed as the unprivileged user ``nobody``."""
    as_user: dict[str, int] = {}
    python, folder = sys.executable, tmp_path
    if os.geteuid() == 0:
        # code_version is standard library only: the system's interpreter, which nobody may run
        # (this one may live in root's home), computes it as well as this one
        python = shutil.which("python3", path="/usr/local/bin:/usr/bin") or ""
        try:
            nobody = pwd.getpwnam("nobody")
        except KeyError:
            pytest.skip("run as root, where chmod 000 does not stop a read, and no user 'nobody' to run as")
        if not python:
            pytest.skip("run as root, where chmod 000 does not stop a read, and no python3 'nobody' may run")
        as_user = {"user": nobody.pw_uid, "group": nobody.pw_gid}
        # nobody must reach the copy: pytest's tmp folders are root's alone
        folder = Path(tempfile.mkdtemp(prefix="profui-code-version-"))
        os.chmod(folder, 0o755)
    try:
        site = folder / "site"
        for sub in ("capture", "analysis"):
            shutil.copytree(REPO / sub, site / "profui" / sub, ignore=shutil.ignore_patterns("__pycache__"))
        steps = site / "profui" / "analysis" / "steps.py"
        assert "profui.analysis.steps" in closure([LOD])
        code = (
            "import json, sys\n"
            "from profui.capture.format import code_version as c\n"
            "assert c.__file__.startswith(sys.argv[1]), c.__file__\n"
            "print(json.dumps(c.code_version([sys.argv[2]])))\n"
        )

        def key() -> str:
            env = {**os.environ, "PYTHONPATH": str(site)}
            run = subprocess.run(
                [python, "-c", code, str(site), LOD],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                cwd=site,
                **as_user,
            )
            return json.loads(run.stdout)

        readable = key()
        steps.chmod(0o000)
        try:
            # the file is unreadable indeed, to the user the key is computed as
            probe = subprocess.run(
                [python, "-c", f"open({str(steps)!r}, 'rb')"],
                capture_output=True,
                text=True,
                **as_user,
            )
            assert probe.returncode != 0 and "PermissionError" in probe.stderr
            unreadable = key()
        finally:
            steps.chmod(0o644)
        assert unreadable != readable
        assert key() == readable
    finally:
        if folder != tmp_path:
            shutil.rmtree(folder)
