"""The `iowall` entry point: a tiny main that maps errors to exit codes (UserError → 2)."""

from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer
from typer._click import Context
from typer.core import TyperCommand, TyperGroup, TyperOption
from typer.main import get_command

from ..errors import Interrupted, IowallError, UserError
from . import (
    bundle,
    compare,
    doctor,
    explain,
    flame,
    gate,
    history,
    limits,
    locks,
    plot,
    recipes,
    report,
    run,
    runs,
    scaling,
)

CONTEXT = {"help_option_names": ["-h", "--help"]}


def _version(value: bool) -> None:
    if value:
        try:
            v = version("iowall")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            v = "unknown"
        print(f"iowall {v}")
        raise typer.Exit(0)


app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  context_settings=CONTEXT,
                  help="Find, explain and track the walls of Linux storage I/O.")


@app.callback()
def _root(version_: Annotated[bool, typer.Option(
        "--version", "-V", is_eager=True, callback=_version,
        help="print the version and exit")] = False) -> None:
    """Find, explain and track the walls of Linux storage I/O."""


# Every command, explicitly: the order here is the order of `iowall --help`.
app.command("limits")(limits.limits)
app.command("run")(run.run_cmd)
app.command("recipes")(recipes.recipes_cmd)
app.command("report")(report.report_cmd)
app.command("runs")(runs.runs)
app.command("show")(runs.show)
app.command("explain")(explain.explain)
app.command("locks")(locks.locks)
app.command("compare")(compare.compare_cmd)
app.command("scaling")(scaling.scaling)
app.command("history")(history.history)
app.command("gate")(gate.gate)
plot.plot_app.command("flame")(flame.plot_flame)
app.add_typer(plot.plot_app, name="plot")
app.command("export")(bundle.export)
app.command("import")(bundle.import_)
app.command("doctor")(doctor.doctor)


def _flags_as_flags(cmd: TyperCommand | TyperGroup) -> None:
    """Show boolean flags bare in ``--help``. Typer's rich help prints every option's type,
    ``<bool>`` for a flag too (``TyperOption.display_type_rich`` ignores ``is_flag``, unlike
    the plain help); an empty metavar is what it prints instead. Walks every command, the
    help option included (it is made per command on demand, then cached)."""
    for p in cmd.get_params(Context(cmd, help_option_names=CONTEXT["help_option_names"])):
        if isinstance(p, TyperOption) and p.is_flag:
            p.metavar = ""
    if isinstance(cmd, TyperGroup):
        for sub in cmd.commands.values():
            _flags_as_flags(sub)  # type: ignore[arg-type]


def command() -> TyperGroup:
    """The click command tree of ``app``, ready to run."""
    cmd = get_command(app)
    assert isinstance(cmd, TyperGroup)
    _flags_as_flags(cmd)
    return cmd


_NOT_ONE_OF = re.compile(r"^(?:Value error, )?('.*') is not one of (.*?)\.?$")


def _usage(e: Exception) -> str:
    """A usage error's line; a value outside a choice (an Enum option) reads as iowall's own
    do, ``--format 'xml': use one of text, md, json``, instead of pydantic's wording."""
    message = str(getattr(e, "message", "") or e)
    opts = getattr(getattr(e, "param", None), "opts", None)
    m = _NOT_ONE_OF.match(message)
    if m and opts:
        choices = ", ".join(c.strip().strip("'") for c in m.group(2).split(","))
        return f"{max(opts, key=len)} {m.group(1)}: use one of {choices}"
    return str(e.format_message())  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; one clear line on stderr for every error a user can cause."""
    try:
        rc = command().main(args=argv, prog_name="iowall", standalone_mode=False)
    except UserError as e:
        print(f"iowall: error: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(f"iowall: {e}; the bed is torn down and the run in flight is stored as "
              "'interrupted'", file=sys.stderr)
        return 130 if e.signame == "SIGINT" else 143
    except KeyboardInterrupt:
        print("iowall: interrupted", file=sys.stderr)
        return 130
    except IowallError as e:
        print(f"iowall: failed: {e}", file=sys.stderr)
        return 1
    except typer.Exit as e:
        return int(e.exit_code)
    except Exception as e:  # click's usage errors arrive here in non-standalone mode
        kinds = {c.__name__ for c in type(e).__mro__}
        if "UsageError" in kinds:
            print(f"iowall: error: {_usage(e)}", file=sys.stderr)
            return 2
        if "Abort" in kinds:
            return 130
        raise
    return rc if isinstance(rc, int) else 0  # a command's own exit code (gate: 1, 3)


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    entry()
