"""What a Python value is, as far as the analyzer can tell without running anything.

The lattice is small on purpose: rules fire on values known to be tensors, so an unknown value never produces a
finding by guess (the `unknown` family covers what cannot be resolved).
"""

HOST = 0  # int, float, bool, str, None, shapes, dtypes, devices: host metadata is safe
UNKNOWN = 1
TENSOR = 2
BOOL_TENSOR = 3  # a comparison of tensors: a mask
TENSORS = 4  # a list/tuple of tensors (split, chunk, unbind)
LAYER = 5  # a sublayer object (self.mlp, items of self.blocks)

NAMES = {HOST: "host", UNKNOWN: "unknown", TENSOR: "tensor", BOOL_TENSOR: "bool tensor", TENSORS: "tensors", LAYER: "layer"}


def is_tensor(kind: int) -> bool:
    return kind == TENSOR or kind == BOOL_TENSOR


def maybe_tensor(kind: int) -> bool:
    """A tensor, or something that is not known to be anything else (receivers of `.item()` and friends)."""
    return kind == TENSOR or kind == BOOL_TENSOR or kind == UNKNOWN


def join(a: int, b: int) -> int:
    """The kind of a value that is either `a` or `b` (branches, binary operators)."""
    if a == b:
        return a
    if is_tensor(a) or is_tensor(b):
        return TENSOR
    if a == HOST:
        return b if b != LAYER else UNKNOWN
    if b == HOST:
        return a if a != LAYER else UNKNOWN
    return UNKNOWN
