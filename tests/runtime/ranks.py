"""Run a worker module as the ranks of one process group and collect what each rank wrote.

A worker is started as ``python -m <module> <rank> <world> <port> <out>``; it runs every case of its
module once and pickles a dict to ``<out>``. One launch serves a whole test module.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
from pathlib import Path

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
    port = free_ports(1)[0]
    # One thread per rank: ranks that share the cores spin against each other's thread pools.
    environ = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    outs = [out_dir / f"rank{rank}.pkl" for rank in range(world)]
    logs = [out_dir / f"rank{rank}.log" for rank in range(world)]
    procs = []
    for rank in range(world):
        with open(logs[rank], "w") as log:
            argv = [sys.executable, "-m", module, str(rank), str(world), str(port), str(outs[rank])]
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
