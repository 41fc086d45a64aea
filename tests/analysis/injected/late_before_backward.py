"""A straggler whose wait is inside a user's range: a 2-rank gloo DDP job shaped like a user's
(``annotate("fwd_bwd")`` around forward and backward) where rank 0 sleeps 20 ms between its
forward and its backward, so rank 1 waits for rank 0 in the gradient all-reduce: its main thread
idle outside any op (DDP's reducer waits for the work at the end of backward) but inside
``fwd_bwd``. ``--no-cause``: no rank sleeps. Rank 0 prints the JSON line with every rank's
median."""

from __future__ import annotations

import time

import torch
from steploop import Clock, ddp_mlp, parse, report_ranks

from profui.capture import annotate

LATE_RANK = 0
LATE_S = 0.020


def main() -> None:
    args = parse(__doc__, steps=18)
    rank, model, opt, x, y = ddp_mlp()
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
    report_ranks(clock, not args.no_cause, LATE_RANK)


if __name__ == "__main__":
    main()
