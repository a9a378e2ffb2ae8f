"""Deprecated import path, kept so third-party plugins keep working: import ``afd.kit.text``."""

from afd.kit.text import *  # noqa: F401,F403
