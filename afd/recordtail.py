"""Deprecated import path, kept so third-party plugins keep working: import ``afd.kit.recordtail``."""

from afd.kit.recordtail import *  # noqa: F401,F403
