"""Stand-ins for agent CLIs and helpers for tests and the demo; never installed as `claude`/`codex`/`devin`."""
