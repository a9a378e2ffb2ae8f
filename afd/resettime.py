"""Deprecated import path, kept so third-party plugins keep working: import ``afd.kit.resettime``."""

from afd.kit.resettime import *  # noqa: F401,F403
