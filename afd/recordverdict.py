"""Deprecated import path, kept so third-party plugins keep working: import ``afd.kit.recordverdict``."""

from afd.kit.recordverdict import *  # noqa: F401,F403
