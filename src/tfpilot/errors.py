"""One exception root for everything tfpilot raises on purpose.

Every message should say what happened, the value received, what was expected and how to fix
it, in one line: the CLI prints ``str(error)`` and exits with ``error.exit_code``.
"""

from __future__ import annotations

__all__ = [
    "TfpilotError",
    "ConfigError",
    "DataError",
    "ModelError",
    "TrainError",
    "ExportError",
    "ServeError",
    "MonitorError",
    "LintError",
]


class TfpilotError(Exception):
    """Root of tfpilot's errors. ``exit_code`` 2 means a usage or input error."""

    exit_code: int = 2

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(TfpilotError):
    """The config file is missing, malformed or holds an impossible value."""


class DataError(TfpilotError):
    """Input data is missing, empty or not in the expected shape.

    ``problems``: every problem found in one pass over the data (the message lists them all), so
    fixing the data takes one round, not one per problem; written to data_report.json."""

    def __init__(self, message: str, *, exit_code: int | None = None, problems: list[str] | None = None) -> None:
        super().__init__(message, exit_code=exit_code)
        self.problems = list(problems or [])


class ModelError(TfpilotError):
    """A model could not be built or imported."""


class TrainError(TfpilotError):
    """Training could not proceed (non-finite loss with policy `stop`, failed resume, ...)."""

    exit_code = 1


class ExportError(TfpilotError):
    """An artifact failed to export or failed its verification."""

    exit_code = 1


class ServeError(TfpilotError):
    """The server could not start or a model directory is unusable."""


class MonitorError(TfpilotError):
    """Drift, validation or push could not be evaluated."""


class LintError(TfpilotError):
    """The linter was given bad paths or options."""
