"""The rule catalogue: every rule by code. Codes are stable once released; a test keeps them unique."""

from __future__ import annotations

from autograph_cg.rules import context_rng, control_flow, dynamic_shape, host_sync, side_effects, unknown
from autograph_cg.rules.base import FAMILIES, Family, Rule

ALL_RULES: tuple[Rule, ...] = (
    host_sync.RULES + dynamic_shape.RULES + control_flow.RULES + side_effects.RULES + context_rng.RULES + unknown.RULES
)
RULES: dict[str, Rule] = {rule.code: rule for rule in ALL_RULES}
BY_NAME: dict[str, Rule] = {rule.name: rule for rule in ALL_RULES}


def rule(code_or_name: str) -> Rule:
    """A rule by code (`AG101`) or name (`host-sync-item`); KeyError names what was asked."""
    found = RULES.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())
    if found is None:
        raise KeyError(code_or_name)
    return found


def family_of(code: str) -> Family:
    for family in FAMILIES:
        if code.startswith(family.prefix):
            return family
    raise KeyError(code)
