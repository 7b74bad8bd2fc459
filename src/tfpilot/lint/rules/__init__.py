"""The rule registry: every module in this package defines exactly one Rule subclass.

Modules are discovered, not listed, so adding a rule is adding a file. ``RULES`` is sorted by
code; codes are unique (checked at import).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from tfpilot.lint.rule import Rule

__all__ = ["RULES", "rule_by_code"]


def _discover() -> list[type[Rule]]:
    found: list[type[Rule]] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        defined = [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, Rule)
            and value is not Rule
            and value.__module__ == module.__name__
        ]
        if len(defined) != 1:
            raise RuntimeError(f"{module.__name__} must define exactly one Rule, found {len(defined)}")
        found.append(defined[0])
    codes = [rule.code for rule in found]
    duplicates = sorted({code for code in codes if codes.count(code) > 1})
    if duplicates:
        raise RuntimeError(f"duplicate lint rule codes: {', '.join(duplicates)}")
    return sorted(found, key=lambda rule: rule.code)


RULES: tuple[type[Rule], ...] = tuple(_discover())
_BY_CODE = {rule.code: rule for rule in RULES}


def rule_by_code(code: str) -> type[Rule] | None:
    return _BY_CODE.get(code.upper())
