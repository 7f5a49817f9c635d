"""autograph-cg: find CUDA-graph hazards in Paddle and PyTorch model code, wrap what can be captured, and run it graphed."""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`from autograph_cg import CUDAGraphedLayer` works without importing the runtime for the analyzer."""
    if name == "CUDAGraphedLayer":
        from autograph_cg.runtime import CUDAGraphedLayer

        return CUDAGraphedLayer
    raise AttributeError(f"module 'autograph_cg' has no attribute {name!r}")
