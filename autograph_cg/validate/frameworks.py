"""The few framework operations a validation run needs, spelled once for PyTorch and once for Paddle.

Values leave the framework as numpy arrays, so comparing runs is framework-neutral.
"""

from __future__ import annotations

import sys
from typing import Any, ContextManager, Protocol

import numpy as np

from autograph_cg.validate.target import TargetError


class Framework(Protocol):
    name: str

    def seed(self, n: int) -> None: ...
    def cuda_available(self) -> bool: ...
    def to_cuda(self, model: Any, inputs: tuple) -> tuple[Any, tuple]: ...
    def is_tensor(self, x: Any) -> bool: ...
    def state(self, model: Any) -> dict: ...
    def load(self, model: Any, state: dict) -> None: ...
    def trainable(self, model: Any) -> list: ...
    def optimizer(self, params: list, lr: float) -> "Optimizer": ...
    def no_grad(self) -> ContextManager: ...
    def numpy(self, t: Any) -> np.ndarray: ...
    def grad(self, p: Any) -> Any: ...
    def assign(self, p: Any, value: np.ndarray) -> None: ...
    def default_loss(self, outputs: list) -> Any: ...
    def children(self, module: Any) -> list[tuple[str, Any]]: ...
    def names(self, model: Any) -> dict[str, list]: ...


class Optimizer(Protocol):
    def zero_grad(self) -> None: ...
    def step(self) -> None: ...


class TorchFramework:
    name = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch

    def seed(self, n: int) -> None:
        self.torch.manual_seed(n)

    def cuda_available(self) -> bool:
        return bool(self.torch.cuda.is_available())

    def to_cuda(self, model: Any, inputs: tuple) -> tuple[Any, tuple]:
        return model.to("cuda"), tuple(x.to("cuda") if self.is_tensor(x) else x for x in inputs)

    def is_tensor(self, x: Any) -> bool:
        return isinstance(x, self.torch.Tensor)

    def state(self, model: Any) -> dict:
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    def load(self, model: Any, state: dict) -> None:
        model.load_state_dict(state)

    def trainable(self, model: Any) -> list:
        return [p for p in model.parameters() if p.requires_grad]

    def optimizer(self, params: list, lr: float) -> Optimizer:
        opt = self.torch.optim.SGD(params, lr=lr)
        return _Steps(lambda: opt.zero_grad(set_to_none=True), opt.step)

    def no_grad(self) -> ContextManager:
        return self.torch.no_grad()

    def numpy(self, t: Any) -> np.ndarray:
        # A copy: on CPU `.numpy()` shares memory, and a held gradient view makes the runtime's backward eager.
        return t.detach().cpu().numpy().copy()

    def grad(self, p: Any) -> Any:
        return p.grad

    def assign(self, p: Any, value: np.ndarray) -> None:
        with self.torch.no_grad():
            p.copy_(self.torch.from_numpy(value))

    def default_loss(self, outputs: list) -> Any:
        return sum(o.float().pow(2).mean() for o in outputs if o.is_floating_point())

    def children(self, module: Any) -> list[tuple[str, Any]]:
        return list(module.named_children())

    def names(self, model: Any) -> dict[str, list]:
        return _names(model.named_parameters(), model.named_buffers(), model.named_modules(), model.state_dict())


def _names(params: Any, buffers: Any, layers: Any, state: dict) -> dict[str, list]:
    """What code that holds a model finds it by: names of parameters, buffers and layers (with their
    class names), and checkpoint keys."""
    return {
        "parameter names": [n for n, _ in params],
        "buffer names": [n for n, _ in buffers],
        "layer names and classes": [(n, type(m).__name__) for n, m in layers],
        "state_dict keys": list(state),
    }


class PaddleFramework:
    name = "paddle"

    def __init__(self) -> None:
        import paddle

        self.paddle = paddle

    def seed(self, n: int) -> None:
        self.paddle.seed(n)

    def cuda_available(self) -> bool:
        return self.paddle.device.is_compiled_with_cuda() and self.paddle.device.cuda.device_count() > 0

    def to_cuda(self, model: Any, inputs: tuple) -> tuple[Any, tuple]:
        model.to(device="gpu")
        return model, tuple(x.cuda() if self.is_tensor(x) else x for x in inputs)

    def is_tensor(self, x: Any) -> bool:
        return isinstance(x, self.paddle.Tensor)

    def state(self, model: Any) -> dict:
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    def load(self, model: Any, state: dict) -> None:
        model.set_state_dict(state)

    def trainable(self, model: Any) -> list:
        return [p for p in model.parameters() if not p.stop_gradient]

    def optimizer(self, params: list, lr: float) -> Optimizer:
        opt = self.paddle.optimizer.SGD(learning_rate=lr, parameters=params)
        return _Steps(lambda: opt.clear_grad(set_to_zero=False), opt.step)

    def no_grad(self) -> ContextManager:
        return self.paddle.no_grad()

    def numpy(self, t: Any) -> np.ndarray:
        return np.array(t.detach().numpy(), copy=True)

    def grad(self, p: Any) -> Any:
        return p.grad

    def assign(self, p: Any, value: np.ndarray) -> None:
        p.set_value(value)

    def default_loss(self, outputs: list) -> Any:
        return sum(o.astype("float32").pow(2).mean() for o in outputs if self.paddle.is_floating_point(o))

    def children(self, module: Any) -> list[tuple[str, Any]]:
        return list(module.named_children())

    def names(self, model: Any) -> dict[str, list]:
        return _names(
            model.named_parameters(), model.named_buffers(), model.named_sublayers(include_self=True), model.state_dict()
        )


class _Steps:
    """An optimizer reduced to the two calls a training step makes, gradients cleared to None."""

    def __init__(self, zero_grad: Any, step: Any) -> None:
        self.zero_grad, self.step = zero_grad, step


def framework_of(model: Any) -> Framework:
    """The framework whose layer `model` is; only frameworks already imported by the factory are looked at."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(model, torch.nn.Module):
        return TorchFramework()
    paddle = sys.modules.get("paddle")
    if paddle is not None and isinstance(model, paddle.nn.Layer):
        return PaddleFramework()
    raise TargetError(f"the model is a {type(model).__name__}, not a torch.nn.Module or a paddle.nn.Layer")
