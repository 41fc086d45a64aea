"""The clock every injected script keeps: each whole loop iteration timed with perf_counter, the
median of the steps after warm-up printed as JSON on the script's last line. Works without profui."""

from __future__ import annotations

import argparse
import json
import statistics
import time

#: Loop iterations not counted: the first steps pay for allocator growth and lazy initialisation.
WARMUP = 3


def parse(description: str, steps: int = 12) -> argparse.Namespace:
    """``--no-cause`` (run the same loop with the injected bottleneck removed) and ``--steps``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--no-cause", action="store_true", help="remove the injected bottleneck")
    p.add_argument("--steps", type=int, default=steps, help="loop iterations (optimizer steps)")
    return p.parse_args()


class Clock:
    """Per-iteration wall times: ``with clock: ...`` around one whole loop iteration. At each
    iteration's end it also keeps the wall clock and the main thread's CPU clock (thread_time):
    between two ends, wall minus CPU is the time the thread was off the CPU (a sleep, or other
    processes holding the CPUs of a loaded machine), the iterations' gaps included."""

    def __init__(self) -> None:
        self.times_ns: list[int] = []
        self.ends_ns: list[int] = []
        self.ends_cpu_ns: list[int] = []

    def __enter__(self) -> Clock:
        self._t0 = time.perf_counter_ns()
        return self

    def __exit__(self, *exc) -> None:
        end = time.perf_counter_ns()
        self.times_ns.append(end - self._t0)
        self.ends_ns.append(end)
        self.ends_cpu_ns.append(time.thread_time_ns())

    def median_ns(self) -> int:
        """Median iteration time after the warm-up steps."""
        return round(statistics.median(self.times_ns[WARMUP:]))


def report(clock: Clock, cause: bool, **extra) -> None:
    """Print the run's JSON line (last line of stdout)."""
    out = {
        "median_step_ns": clock.median_ns(),
        "cause": cause,
        "steps_ns": clock.times_ns,
        "ends_ns": clock.ends_ns,
        "ends_cpu_ns": clock.ends_cpu_ns,
        **extra,
    }
    print(json.dumps(out), flush=True)


def ddp_mlp():
    """A gloo DDP job's model, optimizer and batch (run under torchrun), one thread per rank:
    the rank, the DDP-wrapped MLP, its SGD optimizer, and a fixed input and target."""
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    return rank, model, opt, torch.randn(32, 256), torch.randint(0, 10, (32,))


def report_ranks(clock: Clock, cause: bool, late_rank: int) -> None:
    """Every rank's median gathered; rank 0 prints the job's JSON line (the ranks' median), then
    the process group ends and the process exits."""
    import os

    import torch.distributed as dist

    medians = [None] * dist.get_world_size()
    dist.all_gather_object(medians, clock.median_ns())
    if dist.get_rank() == 0:
        out = {
            "median_step_ns": round(statistics.median(medians)),
            "cause": cause,
            "late_rank": late_rank,
            "per_rank_median_ns": medians,
            "steps_ns": clock.times_ns,
            "ends_ns": clock.ends_ns,
            "ends_cpu_ns": clock.ends_cpu_ns,
        }
        print(json.dumps(out), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    # torch 2.13 CPU + gloo aborts now and then in its exit-time destructors; the output is out.
    os._exit(0)


def mlp(*widths: int):
    """One CPU thread, seed 0, and a ReLU MLP through ``widths`` (input first, 10 classes last)
    with its SGD optimizer: the single-process scripts' model."""
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    layers = [
        m for a, b in zip(widths, widths[1:], strict=False) for m in (torch.nn.Linear(a, b), torch.nn.ReLU())
    ]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(widths[-1], 10))
    return model, torch.optim.SGD(model.parameters(), lr=0.01)
