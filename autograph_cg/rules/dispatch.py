"""One lookup table built from all rules, so the walk resolves a call once whatever the number of rules."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator

from autograph_cg.analysis.frameworks import FRAMEWORKS, HOST_LIBRARIES
from autograph_cg.rules.base import Rule
from autograph_cg.rules.registry import ALL_RULES

EXTERNAL_ROOTS = HOST_LIBRARIES


@dataclass(frozen=True)
class Dispatch:
    methods: dict[str, tuple[Rule, ...]]  # tensor (or unknown) receiver methods: .item(), .numpy()
    op_methods: dict[str, tuple[Rule, ...]]  # ops in method form, on known tensors: x.nonzero()
    ops: dict[str, tuple[Rule, ...]]  # paddle.X / torch.X by short name
    functions: dict[str, tuple[Rule, ...]]
    prefixes: tuple[tuple[str, tuple[Rule, ...]], ...]
    builtins: dict[str, tuple[Rule, ...]]
    nodes: dict[type, tuple[Rule, ...]]
    layer_methods: dict[str, tuple[Rule, ...]]
    self_writes: tuple[Rule, ...]
    global_writes: tuple[Rule, ...]
    outer_writes: tuple[Rule, ...]  # item and attribute assignments on objects that outlive the call
    container_mutations: tuple[Rule, ...]
    format_calls: tuple[Rule, ...]
    external_roots: frozenset[str]

    def named(self, qual: str) -> Iterator[tuple[Rule, str]]:
        """The rules a call of the function `qual` (qualified) matches, each with the name it matches by: the exact
        function, a prefix (both by `qual`), or a framework op by its short name. The walk asks for calls written so,
        the verdict pass for a function reached as a value."""
        for rule in self.functions.get(qual, ()):
            yield rule, qual
        for prefix, prefixed in self.prefixes:
            if qual.startswith(prefix):
                for rule in prefixed:
                    yield rule, qual
        if qual.split(".", 1)[0] in FRAMEWORKS:
            short = qual.rsplit(".", 1)[-1]
            for rule in self.ops.get(short, ()):
                yield rule, short


def build(rules: tuple[Rule, ...]) -> Dispatch:
    tables: dict[str, defaultdict[object, list[Rule]]] = {
        k: defaultdict(list) for k in ("methods", "op_methods", "ops", "functions", "prefixes", "builtins", "nodes", "layer", "hooks")
    }
    for rule in rules:
        for name in rule.methods:
            tables["methods"][name].append(rule)
            if rule.hook == "layer-method":
                tables["layer"][name].append(rule)
        for name in rule.ops:
            tables["ops"][name].append(rule)
            tables["op_methods"][name].append(rule)
        for name in rule.functions:
            tables["functions"][name].append(rule)
        for prefix in rule.prefixes:
            tables["prefixes"][prefix].append(rule)
        for name in rule.builtins:
            tables["builtins"][name].append(rule)
        for node_type in rule.node_types:
            tables["nodes"][node_type].append(rule)
        if rule.hook and rule.hook != "layer-method":
            tables["hooks"][rule.hook].append(rule)
    frozen = {k: {key: tuple(v) for key, v in t.items()} for k, t in tables.items()}
    hooks = frozen["hooks"]
    format_rules = tuple(r for r in rules if "format" in r.builtins)
    return Dispatch(
        methods=frozen["methods"],  # type: ignore[arg-type]
        op_methods=frozen["op_methods"],  # type: ignore[arg-type]
        ops=frozen["ops"],  # type: ignore[arg-type]
        functions=frozen["functions"],  # type: ignore[arg-type]
        prefixes=tuple(frozen["prefixes"].items()),  # type: ignore[arg-type]
        builtins=frozen["builtins"],  # type: ignore[arg-type]
        nodes=frozen["nodes"],  # type: ignore[arg-type]
        layer_methods=frozen["layer"],  # type: ignore[arg-type]
        self_writes=hooks.get("self-write", ()),
        global_writes=hooks.get("global-write", ()),
        outer_writes=hooks.get("container-mutation", ()),
        container_mutations=hooks.get("container-mutation", ()),
        format_calls=format_rules,
        external_roots=EXTERNAL_ROOTS,
    )


DISPATCH = build(ALL_RULES)
