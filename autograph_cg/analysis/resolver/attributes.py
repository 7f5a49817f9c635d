"""What an attribute read gives: of `self` (and `super()`), of package classes and instances, and of outside objects.

`self.attr` on an instance is what the methods of the first class of its MRO that writes it assign (with the
setters left out of the default build), a class attribute, a dataclass field, or what `setattr` under computed names
may set; attributes of outside objects (framework layers, modules, classes) are told from their names.
"""

from __future__ import annotations

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis.facts import ClassFacts, ModuleFacts
from autograph_cg.analysis.resolver.sites import Ctx, defines, owner_class
from autograph_cg.analysis.resolver.summaries import DYNAMIC, ITEMS, MODULE_SCOPE, Expr, ScopeSummary, reads_self
from autograph_cg.analysis.resolver.values import EMPTY, HOST, TENSOR, Atom, Value, listing, union, unknown

#: Parts of an outside qualified name (`paddle.distributed.fleet.layers.mpu.mp_layers.RowParallelLinear`: 7) beyond
#: which an attribute read gives an unknown: a cycle (`x = x.device` of an outside object) grows one forever
_MAX_NAME_PARTS = 10
_LONG_CHAIN = unknown("an attribute chain of outside code too long to follow")
_MAPPING_BASES = ("OrderedDict", "dict", "Mapping", "MutableMapping", "UserDict", "defaultdict")
_STRING_METHODS = frozenset(
    {"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "replace", "removeprefix", "removesuffix", "split", "startswith", "endswith"}
)
#: Layer methods that return the layer itself (`nn.Module.train`, `.to`, ...), when the package does not define them
_RETURNS_SELF = frozenset({"train", "eval", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_", "to_empty"})
_CONTAINER_READS = frozenset({"values", "items", "get", "pop", "copy", "setdefault", "__getitem__", "children", "named_children", "modules"})
#: A layer's methods that give the layers it holds, as the container reads they are like
_CHILDREN = {"children": "values", "named_children": "items"}


class Attributes:
    """The `Solver`'s attribute reads; what the expressions assigned hold is `Expressions`' `_eval`."""

    def _self(self, ctx: Ctx) -> Value:
        """What `self` is in method scope `ctx`: the concrete class an inherited method runs for (`("self", cls)`);
        in the run of `__getitem__` for one `obj[key]`, the package classes `obj` may be an instance of (a registry's
        `self._global_mapping` is its subclass's table); else the method's own class (other runs keep it: following
        the caller's object into every run cost a fifth of transformers' solving and changed no verdict)."""
        owner = owner_class(ctx[0], ctx[1], self.package)
        if owner is None:
            return unknown("self outside a class")
        site = ctx[2]
        if site is not None and site[0] == "self":
            return frozenset({("I", site[1])})
        if site is not None and isinstance(site[0], int) and site[2] > 0:
            assert self._sites is not None
            func = self._sites.calls[site[0]][1]
            if func[0] == "a" and func[2] == "__getitem__":
                classes = self.package.classes
                found = frozenset(
                    a for a in self._eval(func[1], site[1]) if a[0] == "I" and a[1] in classes and owner in self.package.mro(a[1])
                )
                if found:
                    return found
        return frozenset({("I", owner)})

    def _super(self, attr: str, ctx: Ctx) -> Value:
        """`super().attr`: the next definition in the MRO, or the mapping a dict subclass was built with."""
        assert self._sites is not None
        owner = owner_class(ctx[0], ctx[1], self.package)
        target = self._sites.method_owner(owner, attr, after=owner) if owner else None
        if target is not None:
            return frozenset({("G", f"{target}.{attr}")})
        if owner and attr in _CONTAINER_READS and self._is_mapping(owner):
            return frozenset({("mapping-of", owner, attr)})
        return EMPTY if attr == "__init__" else unknown(f"super().{attr}")

    def _attribute_of(self, value: Value, attr: str) -> Value:
        out: set[Atom] = set()
        package = self.package
        for atom in value:
            kind = atom[0]
            if kind == "G":
                qual = atom[1]
                if attr == "func":
                    out.add(atom)  # `partial(f).func` is f: a partial is its callable here
                elif attr in ("__name__", "__qualname__"):
                    out.add(("C", qual.rsplit(".", 1)[-1]))
                elif qual in package.classes:
                    out |= self._class_attribute(qual, attr)
                elif qual in package.modules:
                    out |= self._module_name(qual, attr)
                elif qual.count(".") >= _MAX_NAME_PARTS - 1:
                    out |= _LONG_CHAIN
                elif self._function_scope(qual) is None and not qual.rsplit(".", 1)[-1][:1].isupper():
                    out |= self._node(("global", f"{qual}.{attr}"))  # a module or function outside
                elif attr[:1].isupper():
                    out |= self._node(("global", f"{qual}.{attr}"))  # a class nested in one outside
                # other attributes of class and function objects hold nothing a layer is built from
            elif kind == "I" and attr in _RETURNS_SELF and (atom[1] not in package.classes or self._inherited(atom[1], attr)):
                out.add(("returns-self", atom))  # `nn.Identity().train(mode)` is that Identity
            elif kind == "I":
                qual = atom[1]
                if qual in package.classes:
                    out |= self._node(("attr", qual, attr))
                else:
                    out |= _framework_instance_attribute(qual, attr)
            elif kind == "C" and isinstance(atom[1], str) and attr in _STRING_METHODS:
                out.add(("str-method", atom[1], attr))  # `name.lower()` of a known string is a known string
            elif kind in ("C", "H"):
                out.add(("H",))
            elif kind == "T":
                out |= HOST if attr in fw.HOST_ATTRIBUTES else TENSOR
            elif kind == "?":
                out.add(atom)
            elif kind in ("L", "K") and attr in _CONTAINER_READS:
                out.add(("container-method", atom, attr))
        return frozenset(out)

    def _class_attribute(self, cls: str, attr: str) -> Value:
        for owner in self.package.mro(cls):
            module, facts = self.package.classes[owner]
            if defines(facts, attr):
                return frozenset({("G", f"{owner}.{attr}")})
            if attr in facts.attrs:
                return union(self._eval(e, (module.module, MODULE_SCOPE, None)) for e in facts.attrs[attr])
        return EMPTY

    def _instance_attribute(self, cls: str, attr: str) -> Value:
        """`self.attr` on an instance of `cls`: the first class of its MRO that assigns or defines it decides."""
        package = self.package
        declared_sub = self.sub_config(cls, attr)  # a composite config's `text_config`: see `registries`
        if declared_sub is not None:
            return declared_sub
        only_declared = False
        for owner in package.mro(cls):
            module, facts = package.classes[owner]
            written: list[Value] = []
            for method, summary in self._writes(owner).writing(attr):
                if not self._builds(owner, method):
                    continue
                ctx = (module.module, summary.name, ("self", cls) if owner != cls else None)  # run for this class
                shared = (module.module, summary.name, None)  # what reads no self is the same for every class
                written.extend(self._eval(e, ctx if reads_self(e, summary) else shared) for e in summary.self_attrs.get(attr, ()))
                written.extend(self._eval(e, ctx) for e in self._named(summary, attr, ctx, known=True))
            if written:
                return union(written)
            if defines(facts, attr):
                return frozenset({("G", f"{owner}.{attr}")})
            if attr in facts.attrs:
                declared = union(self._eval(e, (module.module, MODULE_SCOPE, None)) for e in facts.attrs[attr])
                found = declared | self._field(cls, owner, attr)
                if found or any(e[0] != "ann" for e in facts.attrs[attr]):
                    return found
                only_declared = True  # `config: "Config"` says nothing of its value: a base that assigns it decides
        if only_declared:
            return EMPTY
        if attr in _CHILDREN and self.package.is_layer(cls):  # `model.named_children()`: the layers it holds
            given, assigned = self._held(cls, self._node)
            children = listing(given | {a for a in assigned if self.may_be_layer(a)})
            return frozenset({("container-method", children, _CHILDREN[attr])})
        bases = self._external_bases(cls)
        if attr in _CONTAINER_READS and any(fw.layer_kind(b) == "container" for b in bases):
            held = self._node(("attr", cls, ITEMS)) if attr != ITEMS else EMPTY  # a ModuleDict subclass's own items
            return frozenset({("container-method", listing(self._items(held)), attr)})
        dynamic = attr not in (ITEMS, DYNAMIC) and any(DYNAMIC in self._written(owner) for owner in package.mro(cls))
        if bases:
            known = _framework_instance_attribute(bases[0], attr)
            if not dynamic or any(a[0] != "?" for a in known):  # what the framework class gives, when it knows
                return known
        if dynamic:  # `setattr(self, key, value)`, `add_module(*pair)` under computed names
            return self._node(("dynamic", cls, attr))
        return EMPTY  # set nowhere: reading it would raise, so no value flows from here

    def _builds(self, owner: str, method: str) -> bool:
        """Whether what `method` of `owner` assigns on self counts here. A setter (`set_input_embeddings(new)`, a
        method neither `__init__` nor called from it) changes the build only when called: the default build, which
        the defaults and configured solvers answer, is what construction makes."""
        return method == "__init__" or (not self.defaults and self.branches is None) or self._called_from_init(owner, method)

    def _dynamic(self, cls: str, attr: str) -> Value:
        """What `setattr(self, name, value)` under computed names may set `attr` to: each name solved for `cls` (an
        inherited `setattr(self, self.base_model_prefix, ...)` sets the prefix of the class it runs for), a write
        whose names are known strings other than `attr` left out."""
        parts: list[Value] = []
        for owner in self.package.mro(cls):
            module = self.package.classes[owner][0]
            for method, summary in self._writes(owner).writing(DYNAMIC):
                if not self._builds(owner, method):
                    continue
                ctx = (module.module, summary.name, ("self", cls) if owner != cls else None)
                parts.extend(self._node(("expr", e, ctx)) for e in self._named(summary, attr, ctx, known=False))  # shared
        return union(parts)

    def _named(self, summary: ScopeSummary, attr: str, ctx: Ctx, known: bool) -> list[Expr]:
        """The writes under computed names of a method that may set `attr`: with `known`, those whose names are
        solved to strings, `attr` among them (they count as that method's writes of `attr`); without, the others
        that may (`add_module(*pair)`, names that cannot be told: what an attribute no code names may hold)."""
        found = []
        for expr in summary.self_attrs.get(DYNAMIC, ()):
            names = self._node(("expr", expr[1], ctx)) if expr[0] == "named" else EMPTY  # solved once for every attribute
            solved = bool(names) and all(a[0] == "C" for a in names)
            if solved == known and (not solved or ("C", attr) in names):
                found.append(expr)
        return found

    def _inherited(self, cls: str, method: str) -> bool:
        """Whether `cls` gets `method` from outside the package (no class of its MRO here defines it)."""
        assert self._sites is not None
        return self._sites.method_owner(cls, method) is None

    def _written(self, cls: str) -> set[str]:
        """The attributes the methods of `cls` itself assign on `self`."""
        return self._writes(cls).attrs

    def _writes(self, cls: str) -> "Writes":
        """What the methods of `cls` itself assign on self, read as one fact (dropped when a summary of the class
        changes, `refresh`): an attribute's value looks at the methods that may write it, not at every method of
        every class of the MRO (a model's MRO holds hundreds)."""
        self._read(("writes", cls))
        found = self._writers.get(cls)
        module, facts = self.package.classes[cls]
        if found is None:
            found = self._writers[cls] = Writes(module, facts)
        return found

    def _field(self, cls: str, owner: str, attr: str) -> Value:
        """A field of a class whose `__init__` is generated (a dataclass, a NamedTuple): what constructions pass, or,
        when a subclass defines `__init__`, what the `super().__init__(...)` of the last such one hands on
        (`MBConvConfig.__init__` passing `block` on to its dataclass base)."""
        order = self.package.mro(cls)
        here = order.index(owner)
        if self.defaults or any(self.package.classes[c][1].has_init for c in order[here:]):
            return EMPTY
        fields = list(self.package.classes[owner][1].attrs)
        position = fields.index(attr)
        handing = [c for c in order[:here] if self.package.classes[c][1].has_init]
        if handing:
            module, facts = self.package.classes[handing[-1]]
            summary = self.scope(module.module, f"{facts.name}.__init__")
            ctx: Ctx = (module.module, f"{facts.name}.__init__", None)
            calls = [(c, ctx) for c in summary.calls if c[1] == ("sup", "__init__")] if summary is not None else []
        else:
            calls = [(call, ctx) for call, ctx, _ in self._sites_of(cls)]
        parts: list[Value] = []
        for call, ctx in calls:
            args = call[2]
            if position < len(args) and not any(a[0] == "*" for a in args[: position + 1]):
                parts.append(self._eval(args[position], ctx))
            parts.extend(self._eval(v, ctx) for k, v in call[3] if k == attr)
        return union(parts)

    def _called_from_init(self, cls: str, method: str) -> bool:
        """Whether `__init__` of `cls` calls `self.method(...)` (helpers that build sublayers)."""
        module, facts = self.package.classes[cls]
        summary = self.scope(module.module, f"{facts.name}.__init__")
        return summary is not None and any(c[1] == ("s", method) for c in summary.calls)

    def _external_bases(self, cls: str) -> list[str]:
        return [b for owner in self.package.mro(cls) for b in self.package.classes[owner][1].bases if self.package.resolve(b) is None]

    def _is_mapping(self, cls: str) -> bool:
        return any(b.rsplit(".", 1)[-1] in _MAPPING_BASES for b in self._external_bases(cls))


class Writes:
    """What the methods of one class assign on self: its methods with a summary (in the order the class defines them,
    `__init__` last), and, by attribute, those that may write it (by name, or under computed names)."""

    def __init__(self, module: ModuleFacts, facts: ClassFacts) -> None:
        self.methods: list[tuple[str, ScopeSummary]] = []
        for method in (*facts.methods, "__init__") if facts.has_init else facts.methods:
            summary = module.scopes.get(f"{facts.name}.{method}")
            if summary is not None:  # None: its summary failed (an analyzer bug recorded in the file's errors)
                self.methods.append((method, summary))
        self.attrs: set[str] = {attr for _, summary in self.methods for attr in summary.self_attrs}
        self._writing: dict[str, list[tuple[str, ScopeSummary]]] = {}

    def writing(self, attr: str) -> list[tuple[str, ScopeSummary]]:
        """The methods that assign `attr` or assign under computed names (which may be `attr`)."""
        found = self._writing.get(attr)
        if found is None:
            found = self._writing[attr] = [(m, s) for m, s in self.methods if attr in s.self_attrs or DYNAMIC in s.self_attrs]
        return found


def _framework_instance_attribute(cls: str, attr: str) -> Value:
    """Attributes of framework layers: parameters and buffers are tensors, `training` and the rest host values."""
    if attr in ("weight", "bias", "running_mean", "running_var", "_mean", "_variance", "in_proj_weight"):
        return TENSOR
    if attr in fw.HOST_ATTRIBUTES or attr.startswith(("in_", "out_", "num_", "_num")) or attr in ("eps", "epsilon", "p", "normalized_shape"):
        return HOST
    return unknown(f"attribute `{attr}` of `{cls.rsplit('.', 1)[-1]}`")
