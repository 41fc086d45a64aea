"""A compute-bound CPU training loop with nothing injected: wide matmuls (batch 64, 1024-wide
layers) and little else. ``--no-cause`` is accepted and changes nothing (there is no cause)."""

from __future__ import annotations

import torch
from steploop import Clock, parse, report


def main() -> None:
    args = parse(__doc__)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        *[m for _ in range(4) for m in (torch.nn.Linear(1024, 1024), torch.nn.ReLU())],
        torch.nn.Linear(1024, 10),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
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
