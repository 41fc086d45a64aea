"""A blocking host stall: before each forward (after the previous optimizer step) the loop
sleeps 25 ms outside any op (a synchronous log write). ``--no-cause``: no sleep. Its JSON line's
``cause_ns``: each iteration's sleep (the script's clock; a loaded host oversleeps)."""

from __future__ import annotations

import time

import torch
from steploop import Clock, mlp, parse, report

STALL_S = 0.025


def main() -> None:
    args = parse(__doc__)
    model, opt = mlp(256, 1024, 1024)
    x, y = torch.randn(32, 256), torch.randint(0, 10, (32,))
    clock = Clock()
    slept_ns = []
    for _ in range(args.steps):
        with clock:
            # first in the iteration, so in ProfilerStep#N with the rest of iteration N (a step
            # ends in its optimizer step)
            t0 = time.perf_counter_ns()
            if not args.no_cause:
                time.sleep(STALL_S)
            slept_ns.append(time.perf_counter_ns() - t0)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    report(clock, not args.no_cause, cause_ns=slept_ns)


if __name__ == "__main__":
    main()
