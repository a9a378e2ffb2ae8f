"""Executors of actions on a pane, each a journaled state machine advanced by the poll loop."""
