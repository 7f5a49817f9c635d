"""transformers' auto classes, read as a type checker's plugin reads a framework's factory.

`AutoModel.from_config(config)` builds a class that the code finds at run time by name: `AutoModel._model_mapping` is
`_LazyAutoMapping(CONFIG_MAPPING_NAMES, MODEL_MAPPING_NAMES)`, two tables of strings (model type -> config class
name, model type -> model class name), and `from_config` imports the model's module and reads the class named for the
model type whose config class is named like `type(config)`. Solving that code as written would need the pairing of
two 500-entry tables, which values (sets, kept small) cannot hold. So the one step is modelled here, from the
analyzed package's own data: the tables are read from its source (module variables, as the solver evaluates them),
the config's class is what the solver finds `config` to be, and the class is looked up by name among the package's
classes. Nothing is imported and no model name is listed here.

It applies to a package module named `*.models.auto.auto_factory` (transformers, or a copy of it vendored under
another name) whose `_BaseAutoModelClass` the auto class inherits `from_config` from, built from a
`_LazyAutoMapping` of that module. The modelled step keeps what that code does:

- remote code (`config.auto_map`) runs only for a config class the tables do not name or when the call asks for it:
  for a named class `resolve_trust_remote_code(None, ...)` gives False. So a call passing `trust_remote_code` (or
  a `**` spread, which may hold it) is not modelled, and a config class the tables do not name is unknown;
- every model type whose config class has that name counts (the code takes one of them), and a table entry that is a
  tuple of names (a choice by `config.architectures`) counts each name;
- a name is the class its model package (or the top package) exports under that name; where none is, every package
  class of that name.

A composite config's sub-configs (`config.text_config`, which the auto classes build the children of composite models
from) are read from the config class's own declaration, as the base config class (in a package module named
`*.configuration_utils`) fills them in: `sub_configs_defaults = {"vision_config": VisionConfig, "text_config":
SubConfigSpec(config_class=AutoConfig, model_type="llama")}` (`sub_config`). A config class that is the base's
subclass is the class of the sub-config (the type checker's trust, as for `config: LlamaConfig`); any other (the auto
config, whose class a configuration's model type picks) makes the default the class the config table
(`CONFIG_MAPPING` of `*.models.auto.configuration_auto`) names for the declared model type, and what another model type
builds unknown: only the default and configured solvers, which answer for the default build, leave that out. A
`backbone_config` goes through the backbone helper, which picks the class by model type (or a timm backbone) for any
declared class, so it is read like the auto config's.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from autograph_cg.analysis.resolver.summaries import MODULE_SCOPE, Expr
from autograph_cg.analysis.resolver.values import Value, union, unknown

if TYPE_CHECKING:
    from autograph_cg.analysis.resolver.sites import Ctx

FACTORY_MODULE = ".models.auto.auto_factory"
CONFIG_MODULE = ".configuration_utils"
CONFIG_TABLE_MODULE = ".models.auto.configuration_auto"
CONFIG_TABLE = "CONFIG_MAPPING"
SPECS = "sub_configs_defaults"
BACKBONE = "backbone_config"
BASE = "_BaseAutoModelClass"
MAPPING = "_LazyAutoMapping"


@lru_cache(maxsize=256)
def _table(value: Value) -> dict[str, Any] | None:
    """A table of names: one dict whose every key is a string and every entry a string or a list of strings (read
    again for every auto class and sub-config that names a table: kept, the value being all it depends on; callers
    only read it)."""
    if len(value) != 1:
        return None
    atom = next(iter(value))
    if atom[0] != "K":
        return None
    table: dict[str, set[str]] = {}
    for key, entry in atom[1]:
        if not isinstance(key, str):
            return None
        names = [entry] if entry[0] == "C" else list(entry[1]) if entry[0] == "L" else None
        if names is None or not all(n[0] == "C" and isinstance(n[1], str) for n in names):
            return None
        table.setdefault(key, set()).update(n[1] for n in names)
    return table



class Registries:
    """The solver's reading of transformers' auto classes and composite configs (a base class of `Solver`)."""

    def auto_build(self, expr: Expr, ctx: "Ctx") -> Value | None:
        """What `Auto.from_config(config)` builds, or None where the call is not one this models (the solver then reads
        the code as written)."""
        callee, args, keywords = expr[1], expr[2], expr[3]
        if callee[0] != "a" or callee[2] != "from_config":
            return None
        if any(key in (None, "trust_remote_code") for key, _ in keywords) or any(a[0] == "*" for a in args):
            return None
        autos = self._eval(callee[1], ctx)
        tables = [self._tables(a[1]) if a[0] == "G" else None for a in autos]
        if not tables or any(t is None for t in tables):
            return None
        config = self._eval(args[0], ctx) if args else union(self._eval(v, ctx) for k, v in keywords if k == "config")
        out: list[Value] = []
        for pair in tables:
            assert pair is not None
            out.extend(self._built(pair, atom) for atom in config)
        return union(out)

    def _tables(self, auto: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The two name tables of auto class `auto` (config class names, model class names, by model type), when it
        inherits `from_config` from the factory's base and its `_model_mapping` is a `_LazyAutoMapping` of two tables."""
        package = self.package
        if auto not in package.classes:
            return None
        owner = self.sites.method_owner(auto, "from_config")
        if owner is None or not owner.endswith(f"{FACTORY_MODULE}.{BASE}"):
            return None
        for cls in package.mro(auto):
            module, facts = package.classes[cls]
            if "_model_mapping" not in facts.attrs:
                continue
            ctx = (module.module, MODULE_SCOPE, None)
            built = [self._mapping_args(e, ctx) for e in facts.attrs["_model_mapping"]]
            if len(built) != 1 or built[0] is None:
                return None
            table_ctx, config_arg, model_arg = built[0]
            configs = _table(self._eval(config_arg, table_ctx))
            models = _table(self._eval(model_arg, table_ctx))
            return (configs, models) if configs is not None and models is not None else None
        return None

    def _mapping_args(self, expr: Expr, ctx: "Ctx") -> "tuple[Ctx, Expr, Expr] | None":
        """For `_model_mapping = MODEL_MAPPING` (a module variable bound once to `_LazyAutoMapping(CONFIGS, MODELS)`): the
        context and the two arguments of that call."""
        if expr[0] != "n":
            return None
        module = ctx[0]
        top = self.scope(module, MODULE_SCOPE)
        bound = top.locals.get(expr[1], ()) if top is not None else ()
        if len(bound) != 1 or bound[0][0] != "call" or len(bound[0][2]) != 2 or bound[0][3]:
            return None
        call = bound[0]
        made = self._eval(call[1], ctx)
        if len(made) != 1 or not next(iter(made))[1].endswith(f"{FACTORY_MODULE}.{MAPPING}"):
            return None
        return ctx, call[2][0], call[2][1]

    def _built(self, tables: tuple[dict[str, Any], dict[str, Any]], config: tuple) -> Value:
        """The instances `from_config` may build for one candidate of `config`."""
        package = self.package
        if config[0] != "I" or config[1] not in package.classes:
            return unknown("an auto class built from a config whose class cannot be told")
        name = config[1].rsplit(".", 1)[-1]
        configs, models = tables
        wanted = {m for kind, names in configs.items() if name in names for m in models.get(kind, ())}
        if not wanted:
            return unknown(f"an auto class built from `{name}`, which its tables do not name")
        return union(self.named_class(m) for m in sorted(wanted))

    def class_in_table(self, name: str) -> Value:
        """Instances of the package class a table names: the one its model package or the top package exports under that
        name, else every class of that name (a node of the solver: `Solver.named_class`)."""
        package = self.package
        found = self.classes_named(name)
        if not found:
            return unknown(f"`{name}` is not found in the package")
        top = found[0].split(".", 1)[0]
        exported = set()
        for qual in found:
            folder = qual.rsplit(".", 2)[0]
            for home in (folder, top):
                if home in package.modules and ("G", qual) in self._module_name(home, name):
                    exported.add(qual)
        return frozenset(("I", q) for q in exported or found)

    def sub_config(self, cls: str, attr: str) -> Value | None:
        """What `config.attr` holds on an instance of package class `cls` whose nearest `sub_configs_defaults` declares
        `attr`, or None where no such declaration decides it (a class of the MRO outside the base's module that assigns
        `attr` itself, an entry not written as a literal: the solver then reads the code as written)."""
        package = self.package
        order = package.mro(cls)
        owners = [c for c in order if SPECS in package.classes[c][1].attrs]
        if not owners or not package.classes[owners[-1]][0].module.endswith(CONFIG_MODULE):
            return None
        base = owners[-1]
        home = package.classes[base][0].module
        if any(attr in self._written(c) for c in order if package.classes[c][0].module != home):
            return None
        module, facts = package.classes[owners[0]]
        declared = facts.attrs[SPECS]
        if len(declared) != 1 or declared[0][0] != "d" or any(k in (None, "**") for k, _ in declared[0][1]):
            return None
        entries = [e for k, e in declared[0][1] if k == attr]
        if len(entries) != 1:
            return None
        ctx = (module.module, MODULE_SCOPE, None)
        entry = entries[0]
        config_class, model_type, optional = entry, None, False
        if entry[0] == "call":
            spec = self._eval(entry[1], ctx)
            if len(spec) != 1 or not next(iter(spec))[1].startswith(f"{home}."):
                return None
            named = dict(zip(("config_class", "model_type", "init_kwargs", "optional"), entry[2]))
            named.update((k, v) for k, v in entry[3] if k is not None)
            if "config_class" not in named:
                return None
            config_class, model_type = named["config_class"], named.get("model_type")
            optional = "optional" in named and self._eval(named["optional"], ctx) != frozenset({("C", False)})
        classes = self._eval(config_class, ctx)
        if len(classes) != 1 or next(iter(classes))[0] != "G":
            return None
        chosen = next(iter(classes))[1]
        nothing = frozenset({("C", None)}) if optional else frozenset()
        if attr != BACKBONE and chosen in package.classes and base in package.mro(chosen):
            return frozenset({("I", chosen)}) | nothing
        types = self._eval(model_type, ctx) if model_type is not None else self._class_attribute(chosen, "model_type")
        default = self._default_config(home, types)
        if default is None:
            return None
        if self.defaults or self.branches is not None:
            return default | nothing
        return default | nothing | unknown(f"sub-config `{attr}`, of the class a configuration's model type picks")

    def _default_config(self, home: str, types: Value) -> Value | None:
        """The instances of the config class the package's config table names for model type `types` (one string)."""
        if len(types) != 1 or next(iter(types))[0] != "C" or not isinstance(next(iter(types))[1], str):
            return None
        module = home.removesuffix(CONFIG_MODULE) + CONFIG_TABLE_MODULE
        top = self.scope(module, MODULE_SCOPE)
        bound = top.locals.get(CONFIG_TABLE, ()) if top is not None else ()
        if len(bound) != 1 or bound[0][0] != "call" or len(bound[0][2]) != 1 or bound[0][3]:
            return None
        tables = [_table(frozenset({atom})) for atom in self._eval(bound[0][2][0], (module, MODULE_SCOPE, None))]
        if not tables or any(t is None for t in tables):  # a module rebinding the table it imports holds both: they agree
            return None
        names = set().union(*(t.get(next(iter(types))[1], ()) for t in tables if t is not None))
        if len(names) != 1:
            return None
        return self.named_class(next(iter(names)))
