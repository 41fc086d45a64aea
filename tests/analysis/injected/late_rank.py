"""A straggler: a gloo DDP job (``torchrun --standalone --nproc-per-node 3``) where rank 1 sleeps
40 ms before each forward, so the other ranks wait for it in the gradient all-reduce.
``--no-cause``: no rank sleeps. Rank 0 prints the JSON line with every rank's median."""

from __future__ import annotations

import time

import torch
from steploop import Clock, ddp_mlp, parse, report_ranks

LATE_RANK = 1
LATE_S = 0.040


def main() -> None:
    args = parse(__doc__)
    rank, model, opt, x, y = ddp_mlp()
    clock = Clock()
    for _ in range(args.steps):
        with clock:
            if rank == LATE_RANK and not args.no_cause:
                time.sleep(LATE_S)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    report_ranks(clock, not args.no_cause, LATE_RANK)


if __name__ == "__main__":
    main()
