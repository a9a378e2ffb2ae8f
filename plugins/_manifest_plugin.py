"""A manifest as a plugin: the object the loader registers for each `*.toml` agent.

Registered through the same plugin manager as the Python plugins, so
precedence, overrides, `afd plugins` and `afd detect` treat a manifest like
any other plugin. Only a manifest with `[records]` implements `afd_witness`:
an agent without records is a pane-only agent, as Devin is.
"""

from __future__ import annotations

import re
from pathlib import Path

from afd import hookimpl
from afd.model import AgentSpec, Clock, Detection
from afd_plugins._manifest import Manifest, read_manifest
from afd_plugins._manifest_records import RecordWitness
from afd_plugins._manifest_screen import find_banner


class ManifestPlugin:
    def __init__(self, manifest: Manifest):
        self.manifest = manifest

    @hookimpl
    def afd_agents(self) -> list[AgentSpec]:
        return [self.manifest.spec]

    @hookimpl
    def afd_detect(self, agent: str, lines: list[str], clock: Clock, pattern: re.Pattern[str] | None) -> Detection | None:
        if agent != self.manifest.spec.name:
            return None
        return find_banner(self.manifest, lines, clock, pattern)


class ManifestPluginWithRecords(ManifestPlugin):
    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.witness = RecordWitness(manifest.records)

    @hookimpl
    def afd_witness(self, agent, process, since, until, record):
        if agent != self.manifest.spec.name:
            return None
        return self.witness(process, since, until, record)


def plugin_for(path: Path) -> ManifestPlugin:
    """The plugin for the manifest at ``path``; raises ManifestError naming every problem."""
    manifest = read_manifest(path)
    return ManifestPluginWithRecords(manifest) if manifest.records is not None else ManifestPlugin(manifest)
