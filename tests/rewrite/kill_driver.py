"""Run by test_kill.py in a subprocess: rewrite every .py file of a directory, slowly, until killed.

Each fsync sleeps for the given number of seconds, which holds the process between writing a temporary file
and renaming it over the original, the window a crash would hit.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sites import sites_for  # noqa: E402

from autograph_cg.rewrite import rewrite_files  # noqa: E402


def main(directory: str, delay: float) -> int:
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(delay)
        real_fsync(fd)

    os.fsync = slow_fsync
    files = sorted(Path(directory).glob("*.py"))
    sites = [s for f in files for s in sites_for(f.read_bytes(), {"MLP"}, str(f))]
    print("ready", flush=True)
    report = rewrite_files(sites, len(files))
    return report.exit_code(check=False)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2])))
