"""Module paths from before the package was divided by concern, kept importable (with a DeprecationWarning)
until 1.0, so code and tests that import or patch an old path keep working."""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType

PACKAGE = "django_segment_seq"

# Old module (under the package) and the module that holds its code now.
OLD_PATHS = {
    "bounded": "db.bounded",
    "bulk": "fields.bulk",
    "callers": "allocator.callers",
    "dbconn": "allocator.connections",
    "defaultmanager": "fields.managers",
    "events": "cache.events",
    "formatting": "flow.formats",
    "gapless": "flow.gapless",
    "giveback": "cache.giveback",
    "logs": "observe.logs",
    "metrics": "observe.metrics",
    "parsing": "flow.parsing",
    "periods": "flow.derived",
    "prefetch": "cache.prefetch",
    "ranges": "allocator.blocks",
    "resets": "flow.resets",
    "routing": "db.routing",
    "scopes": "flow.scopes",
    "sizing": "cache.sizing",
    "sqlite": "db.sqlite",
    "statements": "db.statements",
    "txblocks": "allocator.memory",
    "usage": "observe.usage",
    # The ID service's URLconfs and client, moved into its app (django_segment_seq.service).
    "async_urls": "service.async_urls",
    "remote": "service.remote",
    "urls": "service.urls",
}


class MovedModules(MetaPathFinder, Loader):
    """Answers an old path with the module itself, not a copy, so patching `old.name` patches the code reading it."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        package, _, old = fullname.rpartition(".")
        if package != PACKAGE or old not in OLD_PATHS or PathFinder.find_spec(fullname, path) is not None:
            return None  # not an old path, or a module of that name is in the package: never shadowed
        return ModuleSpec(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        new = f"{PACKAGE}.{OLD_PATHS[module.__name__.rpartition('.')[2]]}"
        warnings.warn(
            f"{module.__name__} has moved to {new}; the old path goes away in 1.0", DeprecationWarning, stacklevel=2
        )
        sys.modules[module.__name__] = importlib.import_module(new)  # the import system returns this entry


def install() -> None:
    """Let old paths be found, ahead of other finders: a finder that maps the package's name to another copy of it
    (an editable install of another checkout) would otherwise answer an old path with that copy's stale module."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
