"""A compute-bound CPU training loop with nothing injected: wide matmuls (batch 64, 1024-wide
layers) and little else. ``--no-cause`` is accepted and changes nothing (there is no cause)."""

from __future__ import annotations

import torch
from steploop import Clock, mlp, parse, report


def main() -> None:
    args = parse(__doc__)
    model, opt = mlp(1024, 1024, 1024, 1024, 1024)
    x, y = torch.randn(64, 1024), torch.randint(0, 10, (64,))
    clock = Clock()
    for _ in range(args.steps):
        with clock:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    report(clock, False)


if __name__ == "__main__":
    main()
