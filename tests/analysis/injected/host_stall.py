"""A blocking host stall: after each optimizer step the loop sleeps 25 ms outside any op (a
synchronous log write). ``--no-cause``: no sleep."""

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
    for _ in range(args.steps):
        with clock:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if not args.no_cause:
                time.sleep(STALL_S)
    report(clock, not args.no_cause)


if __name__ == "__main__":
    main()
