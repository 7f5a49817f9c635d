"""Which arguments of which framework ops are read on the host: sizes, counts, indices, shapes (and PyTorch scalars).

A tensor given there is copied to the CPU and waited for (Paddle turns it into an `IntArray`/`Scalar` on the host;
PyTorch's argument parser calls `.item()`), so AG109 reports it. The table is data, `host_values.json` beside this
module, derived from the installed frameworks' own signatures at development time and checked by a test that derives
it again (`tests/analysis/test_host_values.py`):

    python -m autograph_cg.rules.host_values          # rewrites host_values.json from the installed torch and paddle

- PyTorch: the signatures of its type stubs (`torch/_C/*.pyi`: `torch.X`, `torch._C._nn`, `torch._C._linalg`, ...,
  and `TensorBase`'s methods) for functions written in C++, and `inspect.signature` for those written in Python. A
  parameter is read on the host when some overload takes an `int`, a `SymInt`, a size or a `Number` (a Scalar)
  there and no overload takes a `Tensor` there (then a tensor given there can only be converted).
- Paddle: `inspect.signature` of its public functions and `Tensor` methods, whose annotations name the types
  (`k: int | Tensor`, `shape: ShapeLike`). A parameter is read on the host when its annotation admits an `int` (or
  a sequence of them) and no float or complex value: `int | Tensor` takes a tensor as a host int, where
  `float | Tensor` (`pow`'s exponent) and `Numeric | Tensor` (`masked_fill`'s value) take it as an operand. One
  exception is named with its reason (`_PADDLE_KERNEL_READS`): `arange`'s bounds, typed like operands, size its
  output and are copied to the host.

The analyzer never imports a framework: `lookup` reads the JSON only.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

TABLE = Path(__file__).with_name("host_values.json")

#: One signature of an op as the table sees it: positional parameters in order (name, annotation text), the name and
#: annotation of `*args` if any, and keyword-only parameters.
Signature = tuple[list[tuple[str, str]], tuple[str, str] | None, list[tuple[str, str]]]
#: What the table holds per op: positions read on the host, keywords read on the host, and the position from which
#: every positional argument is (`x.view(b, n, -1)`), or None.
Entry = tuple[tuple[int, ...], tuple[str, ...], int | None]

_TORCH_NAMESPACES = ("torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft")
_PADDLE_NAMESPACES = ("paddle", "paddle.nn.functional", "paddle.linalg", "paddle.fft", "paddle.signal")
_TORCH_INT = re.compile(r"\b(_int|int|SymInt|_size|Size|_symsize|Number)\b")
_PADDLE_INT = re.compile(r"\bint\b")
_PADDLE_VALUE = re.compile(r"\b(float|complex|number|Numeric)\b")
_TENSOR = re.compile(r"\bTensor\b")
_MAPPINGS = re.compile(r"\b(dict|Dict|Mapping)\[[^\[\]]*\]")
#: Paddle parameters whose signature reads like an operand's (`float | Tensor`) but whose kernel reads them on the host
#: to size its output (`ArangeTensorKernel` copies start, end and step to the CPU): the one exception, with its reason.
_PADDLE_KERNEL_READS: dict[str, tuple[str, ...]] = {"paddle.arange": ("start", "end", "step")}


# ----- reading the table (what the analyzer does) -----------------------------------------------------------------
@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    return json.loads(TABLE.read_text())


def names() -> tuple[str, ...]:
    """Every short name the table knows, in both frameworks and both forms: what AG109 dispatches on."""
    found: set[str] = set()
    for framework in table().values():
        found.update(name.rsplit(".", 1)[-1] for name in framework["functions"])
        found.update(framework["methods"])
    return tuple(sorted(found))


def lookup(qualname: str | None, short: str, method: bool, framework: str | None) -> list[Entry]:
    """The entries of a call: `torch.topk(...)` by its qualified name (or, for an internal path such as
    `paddle.tensor.manipulation.reshape`, the framework's public one of that short name); `x.topk(...)` as a method of
    the module's framework, or of either when the module imports neither."""
    data = table()
    if not method:
        root = (qualname or "").split(".", 1)[0]
        functions = data.get(root, {}).get("functions", {})
        found = functions.get(qualname or "") or functions.get(f"{root}.{short}")
        return [_entry(found)] if found else []
    frameworks = [framework] if framework in data else list(data)
    return [_entry(e) for f in frameworks if (e := data[f]["methods"].get(short))]


def _entry(raw: list[Any]) -> Entry:
    return tuple(raw[0]), tuple(raw[1]), raw[2]


# ----- deriving it (development time: imports the frameworks) ------------------------------------------------------
def derive(framework: str) -> dict[str, Any]:
    """The table of one installed framework."""
    if framework == "torch":
        return _derive_torch()
    if framework == "paddle":
        return _derive_paddle()
    raise ValueError(framework)


def _entry_of(signatures: list[Signature], hosted: Callable[[list[tuple[str, str]]], bool]) -> list[Any] | None:
    """Positions and keywords that `hosted` accepts given the parameters (name, annotation) the signatures have there (a
    position past the named ones takes `*args`), and the first position from which every one is, through `*args`."""

    def at(signature: Signature, index: int) -> tuple[str, str] | None:
        positional, varargs, _ = signature
        return positional[index] if index < len(positional) else varargs

    if not signatures:
        return None
    width = max(len(s[0]) for s in signatures)
    positions = [i for i in range(width) if hosted([p for s in signatures if (p := at(s, i)) is not None])]
    named: dict[str, list[tuple[str, str]]] = {}
    for positional, _, keywords in signatures:
        for name, annotation in (*positional, *keywords):
            named.setdefault(name, []).append((name, annotation))
    keywords = sorted(n for n, parameters in named.items() if hosted(parameters))
    varargs = None
    for start in sorted({len(s[0]) for s in signatures if s[1] is not None}):
        if hosted([p for s in signatures for i in range(start, width + 1) if (p := at(s, i)) is not None]):
            varargs = start
            break
    return [positions, keywords, varargs] if positions or keywords or varargs is not None else None


# PyTorch ----------------------------------------------------------------------------------------------------------
def _torch_hosted(parameters: list[tuple[str, str]]) -> bool:
    return any(_TORCH_INT.search(a) for _, a in parameters) and not any(_TENSOR.search(a) for _, a in parameters)


def _derive_torch() -> dict[str, Any]:
    import torch

    stubs = _torch_stubs(Path(torch.__file__).parent / "_C")
    functions: dict[str, list[Any]] = {}
    for namespace in _TORCH_NAMESPACES:
        module = _import(namespace)
        for name in _public(module):
            obj = getattr(module, name)
            owner = getattr(getattr(obj, "__self__", None), "__name__", None)
            found = _torch_signatures(obj, name, stubs, owner if isinstance(owner, str) else None)
            entry = _entry_of(found, _torch_hosted) if found else None
            if entry is not None:
                functions[f"{namespace}.{name}"] = entry
    methods: dict[str, list[Any]] = {}
    tensor = stubs.get("TensorBase", {})
    for name in sorted(set(dir(torch.Tensor))):
        if name.startswith("_"):
            continue
        found = [_drop_first(s) for s in tensor.get(name, [])] or [_drop_first(s) for s in _python_signatures(getattr(torch.Tensor, name))]
        entry = _entry_of([s for s in found if s is not None], _torch_hosted)
        if entry is not None:
            methods[name] = entry
    return {"version": torch.__version__.split("+")[0], "functions": functions, "methods": methods}


def _torch_stubs(folder: Path) -> dict[str, dict[str, list[Signature]]]:
    """The overloads each type stub of `torch._C` declares: by stub module (`_VariableFunctions`, `_nn`, ...), and
    `TensorBase` for the tensor methods."""
    found: dict[str, dict[str, list[Signature]]] = {}
    for path in sorted(folder.glob("*.pyi")):
        tree = ast.parse(path.read_text())
        module = path.stem if path.stem != "__init__" else ""
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                found.setdefault(module, {}).setdefault(node.name, []).append(_stub_signature(node))
            elif isinstance(node, ast.ClassDef) and node.name in ("TensorBase", "_VariableFunctionsClass"):
                key = "TensorBase" if node.name == "TensorBase" else "_VariableFunctions"
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        found.setdefault(key, {}).setdefault(item.name, []).append(_stub_signature(item))
    return found


def _stub_signature(node: ast.FunctionDef) -> Signature:
    args = node.args
    text = lambda a: ast.unparse(a.annotation) if a.annotation is not None else ""  # noqa: E731
    positional = [(a.arg, text(a)) for a in args.posonlyargs + args.args]
    varargs = (args.vararg.arg, text(args.vararg)) if args.vararg else None
    return positional, varargs, [(a.arg, text(a)) for a in args.kwonlyargs]


def _torch_signatures(obj: Any, name: str, stubs: dict[str, dict[str, list[Signature]]], owner: str | None) -> list[Signature]:
    """A C++ function's overloads from the stub of the module that holds it; a Python function's own signature."""
    if inspect.isfunction(obj):
        return _python_signatures(obj)
    if not callable(obj) or isinstance(obj, type):
        return []
    order = [owner.rsplit(".", 1)[-1]] if owner and owner.startswith("torch._C.") else []
    for stub in (*order, "_VariableFunctions", "_nn", "_linalg", "_special", "_fft"):
        if name in stubs.get(stub, {}):
            return stubs[stub][name]
    return []


def _python_signatures(obj: Any) -> list[Signature]:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    positional: list[tuple[str, str]] = []
    varargs = None
    keywords: list[tuple[str, str]] = []
    for parameter in signature.parameters.values():
        annotation = "" if parameter.annotation is inspect.Parameter.empty else _annotation_text(parameter.annotation)
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            positional.append((parameter.name, annotation))
        elif parameter.kind is parameter.VAR_POSITIONAL:
            varargs = (parameter.name, annotation)
        elif parameter.kind is parameter.KEYWORD_ONLY:
            keywords.append((parameter.name, annotation))
    return [(positional, varargs, keywords)]


def _annotation_text(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _drop_first(signature: Signature) -> Signature | None:
    """A method's signature without `self` (None when it has no first positional parameter)."""
    positional, varargs, keywords = signature
    return (positional[1:], varargs, keywords) if positional else None


# Paddle -----------------------------------------------------------------------------------------------------------
def _derive_paddle() -> dict[str, Any]:
    import paddle
    import paddle._typing as typing_names

    aliases = {n: str(getattr(typing_names, n)) for n in dir(typing_names) if not n.startswith("_")}

    def hosted(parameters: list[tuple[str, str]], read: tuple[str, ...] = ()) -> bool:
        text = _MAPPINGS.sub("", " ".join(_expand(a, aliases) for _, a in parameters))  # `dict[str, int]`: data
        return bool(_PADDLE_INT.search(text)) and not _PADDLE_VALUE.search(text) or any(n in read for n, _ in parameters)

    functions: dict[str, list[Any]] = {}
    for namespace in _PADDLE_NAMESPACES:
        module = _import(namespace)
        for name in _public(module):
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                read = _PADDLE_KERNEL_READS.get(f"{namespace}.{name}", ())
                entry = _entry_of(_python_signatures(obj), lambda parameters, read=read: hosted(parameters, read))
                if entry is not None:
                    functions[f"{namespace}.{name}"] = entry
    methods: dict[str, list[Any]] = {}
    for name in sorted(set(dir(paddle.Tensor))):
        obj = getattr(paddle.Tensor, name, None)
        if name.startswith("_") or not inspect.isfunction(obj):
            continue
        found = [s for s in (_drop_first(s) for s in _python_signatures(obj)) if s is not None]
        entry = _entry_of(found, hosted)
        if entry is not None:
            methods[name] = entry
    return {"version": paddle.__version__, "functions": functions, "methods": methods}


def _expand(annotation: str, aliases: dict[str, str], depth: int = 3) -> str:
    """An annotation with the names of `paddle._typing` (`ShapeLike`, `Size2`, `Numeric`) replaced by what they stand for."""
    for _ in range(depth):
        annotation = re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\b", lambda m: aliases.get(m.group(0), m.group(0)), annotation)
    return annotation


# ----- shared -------------------------------------------------------------------------------------------------------
def _import(namespace: str) -> Any:
    import importlib

    return importlib.import_module(namespace)


def _public(module: Any) -> Iterable[str]:
    exported = getattr(module, "__all__", None)
    names = exported if exported is not None else [n for n in dir(module) if not n.startswith("_")]
    return sorted(n for n in names if hasattr(module, n) and not n.startswith("_"))


def dump(data: dict[str, Any]) -> str:
    """The table as JSON with one op a line (so that a framework release's changes read as a diff)."""
    frameworks = []
    for framework, part in sorted(data.items()):
        sections = [f'"version": {json.dumps(part["version"])}']
        for section in ("functions", "methods"):
            lines = ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(part[section].items()))
            sections.append(f'"{section}": {{\n{lines}\n}}')
        frameworks.append(f"{json.dumps(framework)}: {{\n" + ",\n".join(sections) + "\n}")
    return "{\n" + ",\n".join(frameworks) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    """Rewrite `host_values.json` from the frameworks installed here (both must be)."""
    del argv
    data = {framework: derive(framework) for framework in ("paddle", "torch")}
    TABLE.write_text(dump(data))
    print(f"{TABLE}: " + ", ".join(f"{f} {d['version']}: {len(d['functions'])} functions, {len(d['methods'])} methods" for f, d in data.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
