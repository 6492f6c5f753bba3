"""Packages whose public names are imported on first use.

A command that needs one corner of the package (``topocoll libra``, say) should not pay
for importing every synthesizer and simulator; a package lists where each public name
lives and :func:`lazy_exports` gives it the module ``__getattr__`` and ``__dir__`` of
PEP 562, which import the submodule when the name is first asked for.

Examples
--------
>>> getattr_, dir_ = lazy_exports("topocoll", {"GB": "units"})
>>> getattr_("GB")
1000000000.0
>>> dir_()
['GB']
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str]
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose public name ``n`` lives in the
    submodule ``where[n]``; a name once imported is kept in the package's namespace."""

    def getattr_(name: str) -> object:
        mod = where.get(name)
        if mod is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{mod}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted(where)

    return getattr_, dir_
