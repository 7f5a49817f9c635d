"""Suite-wide settings.

Most tests exercise the analyzer, the rewriter and the reports on toy layers of a kernel or two, which the
plan's cost model would rightly leave unwrapped; they plan every capturable site (`min-kernels` 0). The cost
model's own tests, and the fixture packages' goldens, set it back to the default explicitly. The frameworks
run one intra-op thread.
"""

import os

os.environ.setdefault("AUTOGRAPH_CG_MIN_KERNELS", "0")
# The tests' tensors are tiny: a second intra-op thread only spins. With several processes on two
# cores (the two-rank tests, a loaded machine) spinning threads made a step of a tiny model 100x slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _cuda_left_usable(request: pytest.FixtureRequest):
    """A GPU test must leave CUDA as it found it: a capture left open or a generator left in capture
    mode would fail every later test instead of this one. Checked after each GPU test; a test that
    broke it fails in its teardown, and the state is repaired for the next one."""
    yield
    torch = sys.modules.get("torch")
    if request.node.get_closest_marker("gpu") is None or torch is None or not torch.cuda.is_available():
        return
    problem = None
    try:
        if torch.cuda.is_current_stream_capturing():
            problem = "a stream is still capturing"
        torch.rand(1, device="cuda")
        torch.nn.functional.dropout(torch.ones(4, device="cuda"), 0.5)
        torch.cuda.synchronize()
    except RuntimeError as err:
        problem = str(err).splitlines()[0]
    if problem:
        from autograph_cg.runtime.torch_adapter import close_generator_capture

        close_generator_capture()
        pytest.fail(f"the test left CUDA unusable: {problem}")
