"""Journal intents: a frozen dataclass per action, turned into the journal's stored row and back here, at the edge.

Inside afd an intent is typed (its step an enum, its instants datetimes);
the journal keeps it as a JSON object. `to_row` and `from_row` are the only
places the two meet; a key the row lacks takes the field's default, so rows
written before a field existed still read.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")


def _stored(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple | list):
        return [_stored(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_row(value)
    if isinstance(value, Mapping):
        return {k: _stored(v) for k, v in value.items()}
    return value


def to_row(intent: Any) -> dict:
    """The stored form of a typed intent (JSON-ready)."""
    return {f.name: _stored(getattr(intent, f.name)) for f in dataclasses.fields(intent)}


def stored(**changes: Any) -> dict:
    """Changes to an intent, in the row's stored form (for `Go.data`)."""
    return {k: _stored(v) for k, v in changes.items()}


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _typed(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            if arg is type(None):
                continue
            try:
                return _typed(arg, value)
            except (TypeError, ValueError):
                continue
        return value
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_typed(args[0], v) for v in value)
        if args:
            return tuple(_typed(a, v) for a, v in zip(args, value, strict=True))
        return tuple(value)
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return hint(value)
        if issubclass(hint, datetime):
            return value if isinstance(value, datetime) else datetime.fromisoformat(value)
        if dataclasses.is_dataclass(hint):
            return from_row(hint, value)
        if hint in (int, float, str, bool) and not isinstance(value, hint):
            return hint(value)
    return value


def from_row(cls: type[T], row: Mapping) -> T:
    """The typed intent of a stored row; keys the class does not know are left out."""
    hints = _hints(cls)  # type: ignore[arg-type]  # every intent class is a frozen (hashable) dataclass
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: _typed(hints[k], v) for k, v in row.items() if k in known})
