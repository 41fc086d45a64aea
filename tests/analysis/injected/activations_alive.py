"""A leak: the loop appends each step's hidden activation (4 MiB, still part of its graph) to a
list, so memory in use rises every step. ``--no-cause``: nothing is kept."""

from __future__ import annotations

import torch
from steploop import Clock, parse, report


def main() -> None:
    args = parse(__doc__)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    first = torch.nn.Sequential(torch.nn.Linear(256, 4096), torch.nn.ReLU())
    head = torch.nn.Linear(4096, 10)
    opt = torch.optim.SGD([*first.parameters(), *head.parameters()], lr=0.01)
    x, y = torch.randn(256, 256), torch.randint(0, 10, (256,))
    kept = []
    clock = Clock()
    for _ in range(args.steps):
        with clock:
            hidden = first(x)
            loss = torch.nn.functional.cross_entropy(head(hidden), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if not args.no_cause:
                kept.append(hidden)  # e.g. "for plotting later"
    report(clock, not args.no_cause, kept_bytes=sum(t.numel() * t.element_size() for t in kept))


if __name__ == "__main__":
    main()
