"""The walls in the pinned CLIs' own binaries are all in the reviewed lists (`scripts/real-agents walls`).

After a version bump this is the first test to fail: it prints each message
of the new version that no one has reviewed yet.
"""

from __future__ import annotations

import install
import pytest
import walls

PINS = {pin.agent: pin for pin in install.pins()}


@pytest.mark.real_agents
# The CLIs whose bundles the extractor reads (a JS bundle in a native binary, a Rust binary).
@pytest.mark.parametrize("agent", sorted(a for a in PINS if a in walls.EXTRACT))
def test_every_wall_in_the_pinned_cli_is_in_the_reviewed_list(agent):
    pin = PINS[agent]
    if not install.installed(pin, install.cache_root()):
        pytest.skip(f"{pin.package}@{pin.version} not installed: run scripts/real-agents install")
    path = walls.list_path(pin)
    assert path.exists(), f"no reviewed list {path.name}: start one with scripts/real-agents walls {agent} --draft"
    missing, gone = walls.compare(walls.messages(pin), walls.read_list(path))
    assert not missing, f"{len(missing)} message(s) of {agent} {pin.version} not in {path.name}:\n" + "\n".join(missing)
    assert not gone, f"listed in {path.name} but no longer in the binary:\n" + "\n".join(gone)


def test_the_family_rule_finds_reworded_walls_not_only_the_known_ones():
    reworded = [
        "You've hit your quarterly team limit · resets Jan 1",
        "Your workspace has run out of credits. Ask an admin to add credits.",
        "Your org is out of usage for this month",
        "Usage is paused for your team",
        "Sonnet 6 requires usage credits.",
    ]
    assert all(walls.FAMILY.search(text) for text in reworded)
    assert not walls.FAMILY.search("Claude is thinking about your request")


def test_js_literals_keep_template_placeholders_and_skip_regexes():
    source = 'let a=/"x"/g,b=`You\'ve hit your ${e}${n}`;const c="Usage is paused";'
    assert walls.js_literals(source) == ["You've hit your ${e}${n}", "Usage is paused"]
