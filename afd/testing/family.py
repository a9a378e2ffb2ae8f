"""One family of limit screens the fake agents draw: its text as a function of what varies between occurrences."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class BannerFamily:
    id: str
    agent: str
    limit: bool  # does a real detector have to call this a limit?
    build: Callable[[Mapping[str, Any]], list[str]]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    # The `/rate-limit-options` menu takes the place of the composer while it is open.
    replaces_composer: bool = False


def zone_suffix(params: Mapping[str, Any]) -> str:
    zone = params.get("zone") or ""
    return f" ({zone})" if zone else ""
