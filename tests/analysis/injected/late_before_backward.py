"""A straggler whose wait is inside a user's range: a 2-rank gloo DDP job shaped like a user's
(``annotate("fwd_bwd")`` around forward and backward) where rank 0 sleeps 20 ms between its
forward and its backward, so rank 1 waits for rank 0 in the gradient all-reduce: its main thread
idle outside any op (DDP's reducer waits for the work at the end of backward) but inside
``fwd_bwd``. ``--no-cause``: no rank sleeps. Rank 0 prints the JSON line with every rank's
median."""

from __future__ import annotations

import json
import os
import statistics
import time

import torch
import torch.distributed as dist
from steploop import Clock, parse

from profui.capture import annotate

LATE_RANK = 0
LATE_S = 0.020


def main() -> None:
    args = parse(__doc__, steps=18)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 256), torch.randint(0, 10, (32,))
    clock = Clock()
    for _ in range(args.steps):
        with clock:
            with annotate("fwd_bwd"):
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                if rank == LATE_RANK and not args.no_cause:
                    time.sleep(LATE_S)
                loss.backward()
            opt.step()
    medians = [None] * dist.get_world_size()
    dist.all_gather_object(medians, clock.median_ns())
    if rank == 0:
        out = {
            "median_step_ns": round(statistics.median(medians)),
            "cause": not args.no_cause,
            "late_rank": LATE_RANK,
            "per_rank_median_ns": medians,
            "steps_ns": clock.times_ns,
        }
        print(json.dumps(out), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    # torch 2.13 CPU + gloo aborts now and then in its exit-time destructors; the output is out.
    os._exit(0)


if __name__ == "__main__":
    main()
