"""The dashboard: a local web page served by the daemon, on loopback, behind a one-time login.

The server runs on its own thread and event loop, off the poll loop, and
reaches the daemon only through its control socket, like the CLI: every
action gets the same request handler, and so the same refusals.
"""
