"""Where profui's tasks run: a Dask distributed cluster, and the tasks run on it.

- ``scheduler="tcp://HOST:PORT"`` (or ``PROFUI_DASK_SCHEDULER``): an existing Dask cluster,
  started the Dask way (``dask scheduler``, ``dask worker``, dask-jobqueue);
- else an embedded :class:`distributed.LocalCluster` of ``workers`` single-threaded processes,
  started for the run and closed after it.

Dask does the fault handling: a task whose worker dies is run again on another worker (up to
the scheduler's ``allowed-failures``); one that keeps killing workers raises
:class:`TaskFailed` naming it. Dask is imported inside the functions and this module imports
nothing heavy, so a command that might use a cluster (``profui import``) pays nothing until it
does.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: The environment variable naming a Dask scheduler (``tcp://HOST:PORT``), as ``--scheduler`` does.
SCHEDULER_ENV = "PROFUI_DASK_SCHEDULER"


class ClusterError(RuntimeError):
    """The Dask scheduler asked for cannot be reached; the message names it."""


class TaskFailed(RuntimeError):
    """A task could not finish (its workers kept dying); the message names what it was for."""


def scheduler_address(scheduler: str | None) -> str | None:
    """The scheduler asked for: ``scheduler``, else ``$PROFUI_DASK_SCHEDULER``, else None."""
    return scheduler or os.environ.get(SCHEDULER_ENV) or None


@contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None, ranks: int = 1) -> Iterator[Any]:
    """A ``distributed.Client`` on ``scheduler`` (or ``$PROFUI_DASK_SCHEDULER``), else on a local
    cluster of ``workers`` single-threaded worker processes, closed on exit."""
    from distributed import Client, LocalCluster

    address = scheduler_address(scheduler)
    if address:
        refused = _refused(address)
        if refused:
            raise ClusterError(f"Dask scheduler {address}: cannot connect ({refused})")
        try:
            client = Client(address, timeout="30s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ClusterError(
                f"Dask scheduler {address}: cannot connect ({str(exc).splitlines()[0]})"
            ) from None
        with client:
            yield client
        return
    n = workers or max(1, min(os.cpu_count() or 1, ranks))
    with (
        LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            # its HTTP server on a free port: the default's 8787 held by another cluster on this
            # machine would be a warning on the user's stderr
            dashboard_address=":0",
            # a task's own error reaches the caller as one line: no worker's traceback on stderr
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _refused(address: str) -> str | None:
    """Why a ``tcp://HOST:PORT`` scheduler cannot be reached at once (nothing listens, no such
    host), else None; Dask's own connect would retry for its whole timeout first."""
    if not address.startswith("tcp://"):
        return None
    host, _, port = address[len("tcp://") :].rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        return "not tcp://HOST:PORT"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except ConnectionRefusedError:
        return "connection refused"
    except socket.gaierror:
        return f"unknown host {host}"
    except OSError:
        return None  # a timeout or a route: let Dask try for its timeout
    return None


def run_tasks(
    client: Any,
    fn: Callable[[Any], Any],
    items: list[Any],
    labels: list[str],
    failed: type[TaskFailed] = TaskFailed,
) -> Iterator[tuple[int, Any]]:
    """``fn`` on every item of ``items``, each one task on ``client``'s cluster; yields ``(index,
    result)`` as each finishes. A task's own exception is raised as it is; a task whose workers
    kept dying raises ``failed`` naming its label. Tasks still running when the caller stops
    (or fails) are cancelled."""
    from distributed import as_completed
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    run = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    futures = client.map(fn, items, key=[f"profui-{run}-{i}" for i in range(len(items))], pure=False)
    index = {f.key: i for i, f in enumerate(futures)}
    try:
        for fut in as_completed(futures):
            i = index[fut.key]
            try:
                result = fut.result()
            except (KilledWorker, FutureCancelledError) as exc:
                raise failed(f"{labels[i]} did not finish: {exc}") from None
            yield i, result
    finally:
        client.cancel(futures)


def import_mapper(client: Any) -> Callable[..., Iterator[tuple[int, Any]]]:
    """A mapper for :func:`profui.capture.ingest.import_trace`: the files' conversions as tasks
    on ``client``'s cluster (whose workers must see the files and the output folder)."""
    return functools.partial(run_tasks, client)
