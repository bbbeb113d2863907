"""The `iowall` entry point: a tiny main that maps errors to exit codes (UserError → 2)."""

from __future__ import annotations

import re
import sys
from typing import Annotated

import typer
from typer._click import Command, Context
from typer.core import TyperGroup, TyperOption
from typer.main import get_command

from ..machine import spooldir
from ..vocab.errors import Interrupted, IowallError, StoreFailed, UserError
from .lazy import LazyGroup

CONTEXT = {"help_option_names": ["-h", "--help"]}


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version  # 30 ms: --version only

        try:
            v = version("iowall")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            v = "unknown"
        print(f"iowall {v}")
        raise typer.Exit(0)


#: Every command, explicitly: name → "module:attribute" in iowall.cli (a function is a
#: command, a typer.Typer a group). The order here is the order of `iowall --help`; a
#: command's module is imported only when it runs or prints its own help.
COMMANDS: dict[str, str] = {
    "limits": "limits:limits",
    "run": "run:run_cmd",
    "recipes": "recipes:recipes_cmd",
    "report": "report:report_cmd",
    "runs": "runs:runs",
    "show": "runs:show",
    "explain": "explain:explain",
    "locks": "locks:locks",
    "compare": "compare:compare_cmd",
    "ab": "ab:ab",
    "bisect": "bisect:bisect",
    "scaling": "scaling:scaling",
    "history": "history:history",
    "gate": "gate:gate",
    "export": "bundle:export",
    "import": "bundle:import_",
    "import-fio": "import_fio:import_fio",
    "fleet": "fleet:fleet_app",
    "db": "db:db_app",
    "doctor": "doctor:doctor",
    "recover": "recover:recover_cmd",
    "spool": "spool:spool",
    "serve": "serve:serve",
    "plot": "plot:plot_app",
}


def _flags_as_flags(cmd: Command) -> None:
    """Show boolean flags bare in ``--help``. Typer's rich help prints every option's type,
    ``<bool>`` for a flag too (``TyperOption.display_type_rich`` ignores ``is_flag``, unlike
    the plain help); an empty metavar is what it prints instead. Walks every command, the
    help option included (it is made per command on demand, then cached)."""
    for p in cmd.get_params(Context(cmd, help_option_names=CONTEXT["help_option_names"])):
        if isinstance(p, TyperOption) and p.is_flag:
            p.metavar = ""
    if isinstance(cmd, TyperGroup) and not isinstance(cmd, LazyGroup):
        for sub in cmd.commands.values():
            _flags_as_flags(sub)


class Iowall(LazyGroup):
    """The root group: the commands of ``COMMANDS``, each readied as it is loaded."""

    table = COMMANDS
    prepare = staticmethod(_flags_as_flags)


app = typer.Typer(
    cls=Iowall,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
    help="Find, explain and track the walls of Linux storage I/O.",
)


@app.callback()
def _root(
    version_: Annotated[
        bool,
        typer.Option("--version", "-V", is_eager=True, callback=_version, help="print the version and exit"),
    ] = False,
) -> None:
    """Find, explain and track the walls of Linux storage I/O."""


def command() -> TyperGroup:
    """The click command tree of ``app``, ready to run."""
    cmd = get_command(app)
    assert isinstance(cmd, Iowall)
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


def _missing_command(e: Exception) -> str:
    """The line for a command group run with nothing after it (``iowall plot``)."""
    ctx = getattr(e, "ctx", None)
    listed = getattr(getattr(ctx, "command", None), "list_commands", None)
    if ctx is None or listed is None:
        return "a command is missing (see --help)"
    names = ", ".join(listed(ctx))
    return f"{ctx.command_path} needs a command: one of {names}"


def one_line(message: str) -> str:
    """An error message as the one line every refusal is: a newline from the input (a file
    name, a key) is shown escaped rather than breaking the line."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def optional_values(argv: list[str]) -> list[str]:
    """``--wait`` takes an optional value (``--wait``, ``--wait=10m``, ``--wait 600``), which
    click cannot say: a bare one becomes ``--wait=forever``."""
    out = []
    for i, a in enumerate(argv):
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        bare = a == "--wait" and not re.fullmatch(r"\d+(\.\d+)?[smh]?|forever", nxt)
        out.append("--wait=forever" if bare else a)
    return out


def _import_spool(store: object) -> None:
    """A store opened with runs waiting for it in the spool: import them first (the import
    and what it needs are loaded only then)."""
    from ..actions.spool import replay

    replay(store)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; one clear line on stderr for every error a user can cause."""
    args = optional_values(list(sys.argv[1:] if argv is None else argv))
    if _import_spool not in spooldir.HOOKS:
        spooldir.HOOKS.append(_import_spool)
    try:
        rc = command().main(args=args, prog_name="iowall", standalone_mode=False)
    except UserError as e:
        print(f"iowall: error: {one_line(str(e))}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(
            f"iowall: {e}; the bed is torn down and the run in flight is stored as 'interrupted'",
            file=sys.stderr,
        )
        return 130 if e.signame == "SIGINT" else 143
    except KeyboardInterrupt:
        print("iowall: interrupted", file=sys.stderr)
        return 130
    except StoreFailed as e:
        print(f"iowall: store failed: {one_line(str(e))}", file=sys.stderr)
        return 4
    except IowallError as e:
        print(f"iowall: failed: {e}", file=sys.stderr)
        return 1
    except typer.Exit as e:
        return int(e.exit_code)
    except Exception as e:  # click's usage errors arrive here in non-standalone mode
        kinds = {c.__name__ for c in type(e).__mro__}
        if "NoArgsIsHelpError" in kinds:  # its help is printed already; say what was missing
            print(f"iowall: error: {_missing_command(e)}", file=sys.stderr)
            return 2
        if "UsageError" in kinds:
            print(f"iowall: error: {_usage(e)}", file=sys.stderr)
            return 2
        if "Abort" in kinds:
            return 130
        if any(c.__module__.split(".")[0] in ("sqlalchemy", "sqlite3", "psycopg") for c in type(e).__mro__):
            orig = getattr(e, "orig", None)  # the driver's own words, not SQLAlchemy's statement
            said = (str(orig if orig is not None else e).strip() or type(e).__name__).splitlines()[0]
            print(f"iowall: store failed: {said}", file=sys.stderr)
            return 4
        raise
    if rc == 130:  # typer's return for a KeyboardInterrupt (Ctrl-C) in a command; none returns it
        print("iowall: interrupted", file=sys.stderr)
    return rc if isinstance(rc, int) else 0  # a command's own exit code (gate: 1, 3)


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    entry()
