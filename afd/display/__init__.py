"""What a person reads: text from outside made harmless, then instants put in the reader's zone.

Every human-facing output (the command line's tables and lines, `--watch`,
the demo, notifier messages, the daemon's log) passes text through here;
`--json`, webhook payloads and the store keep text as it came and instants
in ISO 8601 UTC. The order is fixed: neutralise first (`text.neutral`), so
nothing an agent, a pane or an endpoint wrote can move the cursor, recolour
the terminal or pose as markup; then render times (`clock`), so what is
inserted is afd's own words. `reader.Reader` does both for one reader.

It imports nothing of afd but `afd.kit`, so every folder may use it.
"""
