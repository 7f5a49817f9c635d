"""Run a worker module as the ranks of one process group, collect what each rank wrote, compare.

A worker is started as ``python -m <module> <rank> <world> <ports> <out>`` (``ports``: one free port
per rank, comma-separated); it runs every case of its module once and pickles to ``<out>`` a dict
of case name to the parameters after every step, eager and wrapped, and the wrapped layers'
``layer_stats()``. One launch serves a whole test module.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def run_ranks(module: str, world: int, out_dir: Path, env: dict | None = None, timeout: float = 180) -> list[dict]:
    """Start ``world`` ranks of ``module``, wait for all, and return each rank's results."""
    ports = ",".join(map(str, free_ports(world)))
    # One thread per rank: ranks that share the cores spin against each other's thread pools.
    environ = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    outs = [out_dir / f"rank{rank}.pkl" for rank in range(world)]
    logs = [out_dir / f"rank{rank}.log" for rank in range(world)]
    procs = []
    for rank in range(world):
        with open(logs[rank], "w") as log:
            argv = [sys.executable, "-m", module, str(rank), str(world), ports, str(outs[rank])]
            procs.append(subprocess.Popen(argv, cwd=ROOT, env=environ, stdout=log, stderr=subprocess.STDOUT))
    failed = []
    for rank, proc in enumerate(procs):
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            code = "timeout"
        if code != 0:
            failed.append(f"rank {rank} exited with {code}:\n{logs[rank].read_text()[-3000:]}")
    if failed:
        raise RuntimeError("\n".join(failed))
    results = []
    for out in outs:
        with open(out, "rb") as fh:
            results.append(pickle.load(fh))
    return results


def assert_wrapped_matches_eager(results: list[dict], name: str, case: dict, atol: float) -> None:
    """Every rank's wrapped run has eager's parameters after every step and its graphs were replayed,
    or, where the case expects it, it ran eagerly and said why; under data parallelism the ranks
    agree too."""
    for rank, res in enumerate(results):
        r = res[name]
        for step, (got, want) in enumerate(zip(r["wrapped"], r["eager"])):
            assert np.allclose(got, want, atol=atol, rtol=0), (
                f"rank {rank}, step {step}: wrapped differs from eager by {np.abs(got - want).max():.3g}"
            )
        if "presence" in r:  # which parameters had no gradient before each step: eager's
            wrapped_none, eager_none = r["presence"]
            assert wrapped_none == eager_none, f"rank {rank}: gradient presence differs from eager"
        stats = r["stats"]
        assert stats, f"rank {rank}: no wrapped layer"
        for s in stats:
            if case.get("eager"):
                assert s["state"] == "eager" and case["eager"] in s["disabled_reason"], s
                assert s["forward_replays"] == 0
            else:
                assert s["state"] == "graphed" and s["backward_replays"] > 0, s
    if case.get("engine", "ddp") not in ("ddp", "fleet"):
        return  # the ranks hold different shards or stages
    for step in range(len(results[0][name]["wrapped"])):
        ranks = [res[name]["wrapped"][step] for res in results]
        assert all(np.array_equal(ranks[0], other) for other in ranks[1:]), f"ranks disagree at step {step}"
    firsts = [res[name]["eager"][0] for res in results]  # the reference: eager keeps the ranks equal
    assert all(np.allclose(firsts[0], other, atol=atol, rtol=0) for other in firsts[1:])
