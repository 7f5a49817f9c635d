"""Suite-wide settings.

Most tests exercise the analyzer, the rewriter and the reports on toy layers of a kernel or two, which the
plan's cost model would rightly leave unwrapped; they plan every capturable site (`min-kernels` 0). The cost
model's own tests, and the fixture packages' goldens, set it back to the default explicitly.
"""

import os

os.environ.setdefault("AUTOGRAPH_CG_MIN_KERNELS", "0")
