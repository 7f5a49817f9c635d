"""autograph-cg: find CUDA-graph hazards in Paddle and PyTorch model code, wrap what can be captured, and run it graphed."""

__version__ = "0.1.0"
