"""Error types.  Every message says what went wrong and what to do about it."""

from __future__ import annotations


class DoctorError(Exception):
    """Base class; the CLI prints the message and exits with status 2."""


class ConfigError(DoctorError):
    """A thresholds file, a --set override or a duration is malformed."""


class SourceError(DoctorError):
    """A signal source (Prometheus or a fixture) cannot be read."""
