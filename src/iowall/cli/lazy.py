"""The root command group that imports a command's module only when that command runs or
prints its own help, so that ``iowall --help`` and light commands do not pay for numpy,
scipy, SQLAlchemy and matplotlib that other commands need."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Mapping
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import typer
from typer._click import Command, Context, HelpFormatter
from typer._click.exceptions import UsageError
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command

HERE = Path(__file__).parent


def flow(text: str | None) -> str | None:
    """A docstring as help: the lines of each paragraph joined, so that the terminal wraps
    sentences, not the source's line ends ("… at rising job counts; say" / "where the wall
    is"); paragraphs stay apart. Typer's rich help keeps every newline it is given."""
    if text is None:
        return None
    paras = [" ".join(p.split()) for p in text.strip().split("\n\n")]
    return "\n\n".join(p for p in paras if p)


def _flow_all(cmd: Command) -> None:
    """``flow`` the help of a command and of every command under it."""
    cmd.help = flow(cmd.help)
    for sub in getattr(cmd, "commands", {}).values():
        _flow_all(sub)


def load(name: str, target: str) -> Command:
    """The click command of ``target`` ("module:attribute" under ``iowall.cli``): a function
    is one command named ``name``, a ``typer.Typer`` a group."""
    module, attr = target.split(":")
    obj = getattr(importlib.import_module(f"{__package__}.{module}"), attr)
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    if isinstance(obj, typer.Typer):
        one.add_typer(obj, name=name)  # as a sub-app: its own completion options stay off
        group = get_command(one)
        assert isinstance(group, TyperGroup)
        cmd = group.commands[name]
    else:
        one.command(name)(obj)
        cmd = get_command(one)
    _flow_all(cmd)
    return cmd


def summary(target: str) -> str | None:
    """The help text ``target`` would have, read from its module's source without importing
    it (the function's docstring, or a Typer's ``help=``); None when it cannot be read so."""
    module, attr = target.split(":")
    try:
        tree = ast.parse((HERE / f"{module}.py").read_text())
    except (OSError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr:
            return flow(ast.get_docstring(node, clean=True))
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and any(isinstance(t, ast.Name) and t.id == attr for t in node.targets)
        ):
            for kw in node.value.keywords:
                if kw.arg == "help" and isinstance(kw.value, ast.Constant):
                    return flow(str(kw.value.value))
    return None


class LazyGroup(TyperGroup):
    """A TyperGroup whose commands are a table of name → "module:attribute"; the listing in
    ``--help`` is built from each command's help read from source (see ``summary``)."""

    table: Mapping[str, str] = {}
    prepare: Callable[[Command], None] = staticmethod(lambda cmd: None)

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._loaded: dict[str, Command] = {}
        self._listing = False

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.table)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        target = self.table.get(cmd_name)
        if target is None:
            return None
        if cmd_name in self._loaded:
            return self._loaded[cmd_name]
        if self._listing:
            text = summary(target)
            if text is not None:
                return TyperCommand(name=cmd_name, help=text)
        cmd = self._loaded[cmd_name] = load(cmd_name, target)
        self.prepare(cmd)
        return cmd

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def resolve_command(self, ctx: Context, args: list[str]) -> Any:
        """Typer's, with its "Did you mean" drawn from the table (Typer's own looks only at
        commands already made)."""
        try:
            return super().resolve_command(ctx, args)
        except UsageError as e:
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches and "Did you mean" not in e.message:
                e.message = f"{e.message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise
