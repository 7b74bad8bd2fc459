"""The `tfpilot` command line. Each sibling module registers its own commands.

Command modules import TensorFlow inside the command functions, so `tfpilot --help` and
`tfpilot lint` stay fast.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys

import typer

from tfpilot.errors import TfpilotError

__all__ = ["app", "main"]

app = typer.Typer(
    name="tfpilot",
    help="TensorFlow done right: train, diagnose, ship and watch models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_NOT_COMMANDS = {"main", "render", "progress", "quiet"}


def _register_commands() -> None:
    import tfpilot.cli as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name in _NOT_COMMANDS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"tfpilot.cli.{info.name}")
        module.register(app)


# How `tfpilot --help` groups and orders the commands: the lifecycle, as the README tells it.
COMMAND_PANELS = {
    "Train": ("run", "train", "evaluate", "export", "data", "config", "launch"),
    "Diagnose": ("profile", "doctor", "lint", "migrate"),
    "Ship and watch": ("serve", "monitor", "validate", "push", "report"),
}
COMMAND_ORDER = tuple(name for names in COMMAND_PANELS.values() for name in names)


def _order_commands() -> None:
    panel_of = {name: panel for panel, names in COMMAND_PANELS.items() for name in names}

    def name_of(info: object) -> str | None:
        name = getattr(info, "name", None)
        callback = getattr(info, "callback", None)
        return name or (callback.__name__.removesuffix("_command").replace("_", "-") if callback else None)

    def position(info: object) -> int:
        name = name_of(info)
        return COMMAND_ORDER.index(name) if name in COMMAND_ORDER else len(COMMAND_ORDER)

    for info in [*app.registered_commands, *app.registered_groups]:
        name = name_of(info)
        if name in panel_of:
            setattr(info, "rich_help_panel", panel_of[name])  # noqa: B010 (CommandInfo and TyperInfo alike)
    app.registered_commands.sort(key=position)
    app.registered_groups.sort(key=position)


_register_commands()
_order_commands()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: TfpilotError -> one line on stderr and its exit code."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    from tfpilot.cli.quiet import QuietStderr

    quiet = QuietStderr()
    if not debug and os.environ.get("TFPILOT_TF_LOGS", "") in ("", "0"):
        quiet.start()
    try:
        _run(args, debug=debug)
    finally:
        quiet.stop()


def _run(args: list[str], *, debug: bool) -> None:
    try:
        # With standalone_mode=False click returns a command's `typer.Exit(code)` instead of raising it.
        code = app(args=args, prog_name="tfpilot", standalone_mode=False)
    except TfpilotError as error:
        if debug:
            raise
        from tfpilot.cli.render import print_error

        print_error(str(error))
        sys.exit(error.exit_code)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        print("aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as error:
        # Usage errors from click (vendored inside newer typer, a separate package in older ones):
        # matched by shape so either layout works.
        show, exit_code = getattr(error, "show", None), getattr(error, "exit_code", None)
        if callable(show) and isinstance(exit_code, int):
            show()
            sys.exit(exit_code)
        raise
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
