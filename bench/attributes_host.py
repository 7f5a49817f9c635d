"""What watching layer attributes costs, on the CPU (a benchmark, not a test).

A model of 12 blocks (62 modules: each block a layer norm, two linear layers and a rotary embedding whose
cache lives in plain attributes) wrapped whole with the CPU stand-in, in inference. Timed per call:

- an eager call while the model holds a graph (a call that fails the wrapper's guard), which notes the
  attributes of the 62 layers before and compares them after, against the same call with the watch
  switched off (the two alternate, round by round), and the watch's own time inside those calls;
- the walk alone, in a loop: one snapshot of the 62 layers and its comparison, what a capture adds (the
  stand-in adds its own per graph and replay, to replay with the attributes as captured: CPU only);
- a capture (a new wrapper's first call, ``num_warmup_steps=0``), for scale;
- a replayed call, its graph's replay made a no-op (the runtime's host work alone; nothing of the watch
  runs there: compare with the same line on a tree without it).

    python bench/attributes_host.py [--calls 200]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import Any, Callable, Iterator

from torch_needed import torch_or_none

BLOCKS, D, BATCH, SEQ = 12, 32, 4, 16


def build(torch: Any) -> Any:
    nn = torch.nn

    class Rotary(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self._max, self.tables = 0, None

        def forward(self, x: Any) -> Any:
            n = x.shape[1]
            if n > self._max:
                self._max = n
                angles = torch.arange(n)[:, None] / n * torch.arange(1, x.shape[2] + 1)[None, :]
                self.tables = (angles.cos(), angles.sin())
            cos, sin = self.tables
            return x * cos[:n] + x.flip(2) * sin[:n]

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln, self.fc1, self.rotary, self.fc2 = nn.LayerNorm(D), nn.Linear(D, D), Rotary(), nn.Linear(D, D)

        def forward(self, x: Any) -> Any:
            return x + self.fc2(self.rotary(self.fc1(self.ln(x))))

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.Sequential(*[Block() for _ in range(BLOCKS)])

        def forward(self, x: Any, note: Any = None) -> Any:
            return self.blocks(x)

    torch.manual_seed(0)
    return Model()


def per_call(fns: list[Callable[[], Any]], calls: int, rounds: int = 7) -> list[float]:
    """Per function, the least over rounds of the mean time of one call, in microseconds; the functions are
    timed in alternation, round by round (the host's speed drifts)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, sink in zip(fns, times):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            sink.append((time.perf_counter() - start) / calls * 1e6)
    return [min(t) for t in times]


@contextlib.contextmanager
def clocked(owner: type, names: tuple[str, ...], spent: list[float]) -> Iterator[None]:
    """While it lasts, the time spent in ``owner``'s methods ``names`` is added to ``spent`` (seconds)."""
    saved = {name: owner.__dict__[name] for name in names}

    def clock(method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start

        return timed

    for name, method in saved.items():
        setattr(owner, name, clock(method))
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(owner, name, method)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="eager calls per round (7 rounds, the least)")
    args = parser.parse_args(argv)
    if args.calls < 1:
        print("attributes_host: --calls must be at least 1", file=sys.stderr)
        return 2
    torch = torch_or_none("attributes_host")
    if torch is None:
        return 2
    from autograph_cg.runtime import CUDAGraphedLayer
    from autograph_cg.runtime.core import Runner
    from autograph_cg.runtime.graphed import state_of

    model = CUDAGraphedLayer(build(torch), num_warmup_steps=1, backend="standin", guard={"note": "is None"})
    runner = state_of(model).runner
    x = torch.randn(BATCH, SEQ, D)
    rows = []
    with torch.no_grad():
        for _ in range(3):  # warmup, capture, replay
            model(x)
        for entry in runner.entries.values():
            for slot in entry.slots:
                slot.fwd.replay = lambda: None
        layers = runner.ops.sublayers(model)
        rows.append(("replayed call (graph replay a no-op)", per_call([lambda: model(x)], 10 * args.calls)[0]))
        watch = getattr(Runner, "_watching", None)
        if watch is None:  # a tree without the watch: the replay line alone
            print(f"{len(layers)} modules; no watch of attributes in this tree")
            print(f"  {rows[0][0]}: {rows[0][1]:.1f} us")
            return 0
        from autograph_cg.runtime.attributes import Snapshot

        def eager(method: Any) -> Callable[[], None]:
            def call() -> None:
                Runner._watching = method  # type: ignore[method-assign]
                model(x, note=1)

            return call

        spent = [0.0]
        with clocked(Snapshot, ("__init__", "changes"), spent):
            on, off = per_call([eager(watch), eager(lambda self: contextlib.nullcontext())], args.calls)
        Runner._watching = watch  # type: ignore[method-assign]
        rows += [
            ("eager call while graphs exist, watched", on),
            ("the same, watch switched off", off),
            ("the watch's own time in those calls (snapshot and comparison)", spent[0] / (7 * args.calls) * 1e6),
            ("walk alone, in a loop", per_call([lambda: runner.ops.snapshot(layers).changes()], 10 * args.calls)[0]),
        ]
        # Captures of models whose caches are filled already (a capture that fills them runs eagerly instead).
        calls = max(1, args.calls // 20)
        fresh = []
        for _ in range(7 * calls):
            fresh.append(build(torch))
            fresh[-1](x)
        fresh.reverse()

        def capture() -> None:
            CUDAGraphedLayer(fresh.pop(), num_warmup_steps=0, backend="standin")(x)

        rows.append(("capture (a new wrapper's first call)", per_call([capture], calls)[0]))
    print(f"{len(layers)} modules, inference, batch {BATCH}, sequence {SEQ}, width {D}")
    for name, us in rows:
        print(f"  {name}: {us:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
