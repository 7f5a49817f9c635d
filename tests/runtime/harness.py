"""One test body, three runs: PyTorch and Paddle on CPU (stand-in graphs) and PyTorch on CUDA (real graphs).

A harness builds the same small models in each framework and speaks numpy at the edges, so every
test compares the wrapped layer with the unwrapped one value by value.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from tests.runtime.models import define

RNG = np.random.default_rng(1234)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


class Harness:
    """The framework-neutral part; subclasses spell tensors, grads and optimizers their way."""

    name = ""
    device = "cpu"
    backend = "standin"
    atol = 1e-5

    def __init__(self) -> None:
        self.models = define(self.name)

    def build(self, kind: str, *args: Any, **kwargs: Any) -> Any:
        return self.place(getattr(self.models, kind)(*args, **kwargs))

    def place(self, model: Any) -> Any:
        return model

    def twin(self, model: Any) -> Any:
        return copy.deepcopy(model)

    def wrap(self, model: Any, **kwargs: Any) -> Any:
        from autograph_cg.runtime import CUDAGraphedLayer

        kwargs.setdefault("backend", self.backend)
        return CUDAGraphedLayer(model, **kwargs)

    def numpy(self, t: Any) -> np.ndarray:
        return t.detach().cpu().numpy() if self.name == "torch" else t.detach().numpy()

    def grad(self, t: Any) -> np.ndarray | None:
        return None if t.grad is None else self.numpy(t.grad).copy()

    def backward(self, loss: Any, retain_graph: bool = False) -> None:
        loss.backward(retain_graph=retain_graph)

    def loss(self, y: Any) -> Any:
        return (y * y).mean() + y.mean()

    def param_grads(self, model: Any) -> list:
        return [self.grad(p) for p in model.parameters()]

    def buffers(self, model: Any) -> list:
        return [self.numpy(b).copy() for b in model.buffers()]

    def state_dict(self, model: Any) -> dict:
        return model.state_dict()

    def ops(self) -> Any:
        """The runtime's operations of this framework."""
        import importlib

        return importlib.import_module(f"autograph_cg.runtime.{self.name}_adapter").ADAPTER.ops


class TorchHarness(Harness):
    name = "torch"

    def __init__(self, device: str = "cpu") -> None:
        import torch

        super().__init__()
        self.torch, self.device = torch, device
        self.backend = "cuda" if device == "cuda" else "standin"

    def seed(self, n: int) -> None:
        self.torch.manual_seed(n)

    def place(self, model: Any) -> Any:
        return model.to(self.device)

    def tensor(self, array: np.ndarray, requires_grad: bool = False) -> Any:
        return self.torch.tensor(array, device=self.device).requires_grad_(requires_grad)

    def ints(self, array: np.ndarray) -> Any:
        return self.torch.tensor(array, dtype=self.torch.int64, device=self.device)

    def clear_grads(self, model: Any, set_to_none: bool) -> None:
        model.zero_grad(set_to_none=set_to_none)

    def no_grad(self) -> Any:
        return self.torch.no_grad()

    def sgd(self, model: Any, lr: float) -> Any:
        return self.torch.optim.SGD(model.parameters(), lr=lr)

    def reallocate(self, param: Any) -> None:
        param.data = param.data.clone()

    def rand(self, n: int) -> np.ndarray:
        return self.torch.rand(n, device=self.device).cpu().numpy()

    def load(self, model: Any, state: dict) -> None:
        model.load_state_dict(state)

    def container(self, layers: list) -> Any:
        return self.torch.nn.Sequential(*layers)

    def names(self, model: Any) -> dict:
        return {
            "parameters": [n for n, _ in model.named_parameters()],
            "buffers": [n for n, _ in model.named_buffers()],
            "layers": [(n, type(m).__name__) for n, m in model.named_modules()],
            "state_dict": list(model.state_dict()),
        }

    def hook(self, model: Any, pre: Any, post: Any) -> None:
        model.register_forward_pre_hook(pre)
        model.register_forward_hook(post)


class PaddleHarness(Harness):
    name = "paddle"

    def __init__(self) -> None:
        import paddle

        super().__init__()
        self.paddle = paddle

    def seed(self, n: int) -> None:
        self.paddle.seed(n)

    def tensor(self, array: np.ndarray, requires_grad: bool = False) -> Any:
        return self.paddle.to_tensor(array, stop_gradient=not requires_grad)

    def ints(self, array: np.ndarray) -> Any:
        return self.paddle.to_tensor(array, dtype="int64")

    def clear_grads(self, model: Any, set_to_none: bool) -> None:
        model.clear_gradients(set_to_zero=not set_to_none)

    def no_grad(self) -> Any:
        return self.paddle.no_grad()

    def sgd(self, model: Any, lr: float) -> Any:
        return _PaddleSGD(self.paddle.optimizer.SGD(learning_rate=lr, parameters=model.parameters()))

    def reallocate(self, param: Any) -> None:
        param.detach().clone()._share_buffer_to(param)

    def buffers(self, model: Any) -> list:
        """Buffers and batch-norm statistics, which Paddle keeps as parameters that take no gradient."""
        state = [*model.buffers(), *(p for p in model.parameters() if p.stop_gradient)]
        assert state or not any(isinstance(m, self.paddle.nn.layer.norm._BatchNormBase) for m in model.sublayers())
        return [self.numpy(b).copy() for b in state]

    def rand(self, n: int) -> np.ndarray:
        return self.paddle.rand([n]).numpy()

    def load(self, model: Any, state: dict) -> None:
        missing, unexpected = model.set_state_dict(state)
        assert not missing and not unexpected, (missing, unexpected)

    def container(self, layers: list) -> Any:
        return self.paddle.nn.Sequential(*layers)

    def names(self, model: Any) -> dict:
        return {
            "parameters": [n for n, _ in model.named_parameters()],
            "buffers": [n for n, _ in model.named_buffers()],
            "layers": [(n, type(m).__name__) for n, m in model.named_sublayers(include_self=True)],
            "state_dict": list(model.state_dict()),
        }

    def hook(self, model: Any, pre: Any, post: Any) -> None:
        model.register_forward_pre_hook(pre)
        model.register_forward_post_hook(post)


class _PaddleSGD:
    """The two optimizer calls the tests use, spelled the PyTorch way."""

    def __init__(self, opt: Any) -> None:
        self._opt = opt

    def step(self) -> None:
        self._opt.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        self._opt.clear_grad(set_to_zero=not set_to_none)


def close(a: Any, b: Any, atol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return np.allclose(a, b, atol=atol, rtol=1e-4)


def assert_all_close(got: list, want: list, atol: float, what: str) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} vs {len(want)}"
    for i, (a, b) in enumerate(zip(got, want)):
        assert close(a, b, atol), f"{what}[{i}] differs: {a} vs {b}"


def runner_of(layer: Any) -> Any:
    """The runtime's state machine behind a wrapped layer (tests look inside it)."""
    from autograph_cg.runtime.graphed import state_of

    return state_of(layer).runner
