"""Registry entries set or removed for one test and undone after it, in reverse: what monkeypatch.setitem and
delitem do for a dict, for a vocab.registry.Registry (a read-only mapping changed by register and unregister)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coatsearch.vocab.registry import Registry


def _after(registry: Registry[Any], name: str) -> str | None:
    """The name registered right after `name` (None when it is last)."""
    names = list(registry)
    return next(iter(names[names.index(name) + 1 :]), None)


class RegistryPatch:
    """The changes one test makes to registries; `undo` restores each registry's entries and their order."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def delitem(self, registry: Registry[Any], name: str) -> None:
        """Remove the entry `name`; undone by registering it again in its place."""
        after = _after(registry, name)
        old = registry.unregister(name)
        self._undo.append(lambda: registry.register(name, old, before=after))

    def setitem(self, registry: Registry[Any], name: str, entry: Any) -> None:
        """`entry` as `name`: in place of the entry of that name, else last; undone by unregistering it."""
        after = _after(registry, name) if name in registry else None
        if name in registry:
            self.delitem(registry, name)
        registry.register(name, entry, before=after)
        self._undo.append(lambda: registry.unregister(name))

    def undo(self) -> None:
        """Every change undone, the last first."""
        while self._undo:
            self._undo.pop()()
