"""``agentrecall completion bash|zsh``: shell completion, written from the parser itself.

The script is generated from the argument parser each time it is printed, so it knows every
command, option and choice the installed ``agentrecall`` has and never goes stale. It
completes command names (``eval`` then ``locomo``), options (shared ones before or after the
command), the choices of options such as ``--mode``, and file names where a file is expected.

The shell functions that hold the parser's tables are plain POSIX ``case`` statements shared
by both shells; each shell has its own small driver.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentrecall.cli import report
from agentrecall.cli.options import Parents, command

SHELLS = ("bash", "zsh")
FILES = "@files"
"""What the value table says for "complete a file name"."""
FILE_NAMES = frozenset({"file", "path", "db", "source", "destination"})
"""Destinations of arguments that name a file."""


def register(commands: Any, parents: Parents) -> None:
    """Add ``completion`` to ``commands``."""
    parser = command(
        commands,
        "completion",
        parents.output,
        help="print a shell completion script for bash or zsh",
        epilog="Install it for bash in ~/.bashrc, or for zsh in ~/.zshrc after compinit:\n"
        '  eval "$(agentrecall completion bash)"\n'
        '  eval "$(agentrecall completion zsh)"',
        example="agentrecall completion bash > ~/.local/share/bash-completion/completions/"
        "agentrecall",
    )
    parser.add_argument("shell", choices=SHELLS)
    parser.set_defaults(storeless=_completion, verb="completion")


def _completion(args: argparse.Namespace) -> int:
    report.emit(script(args.root_parser, args.shell))
    return report.OK


@dataclass
class Level:
    """What may follow a command path: subcommands, options, and what an argument may be."""

    commands: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)
    """Option -> the words its value may be, or :data:`FILES`."""
    argument: str = ""
    """The words an argument may be (its choices), :data:`FILES`, or ``""`` (anything)."""


def levels(parser: argparse.ArgumentParser, path: str = "") -> Iterator[tuple[str, Level]]:
    """Yield each command path of ``parser`` (``""``, ``"add"``, ``"eval locomo"``), its level."""
    level = Level()
    below: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                level.commands.append(name)
                below.append((f"{path} {name}".strip(), sub))
        elif action.option_strings:
            level.options.extend(action.option_strings)
            kind = _value_kind(action)
            if kind is not None:
                level.values.update(dict.fromkeys(action.option_strings, kind))
        else:
            level.argument = level.argument or _value_kind(action) or ""
    yield path, level
    for name, sub in below:
        yield from levels(sub, name)


def value_options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string that takes a value, anywhere in ``parser``.

    Raises:
        ValueError: an option takes a value under one command and none under another, which
            the completion (like a person) could not tell apart.
    """
    takes: dict[str, bool] = {}
    for _, sub in _parsers(parser):
        for action in sub._actions:
            for option in action.option_strings:
                value = action.nargs != 0
                if takes.setdefault(option, value) != value:
                    raise ValueError(f"{option} takes a value under one command only")
    return sorted(option for option, value in takes.items() if value)


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """Return the completion script of ``parser`` for ``shell`` (``bash`` or ``zsh``)."""
    name = parser.prog
    tables = _tables(parser, name)
    driver = _BASH if shell == "bash" else _ZSH
    return driver.replace("@TABLES@", tables).replace("@NAME@", name).strip()


def _parsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield "", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from ((f"{name} {p}".strip(), s) for p, s in _parsers(sub))


def _value_kind(action: argparse.Action) -> str | None:
    if action.nargs == 0:
        return None
    if action.choices is not None:
        return " ".join(str(choice) for choice in action.choices)
    if action.dest in FILE_NAMES or action.metavar in ("FILE", "PATH"):
        return FILES
    return None


def _tables(parser: argparse.ArgumentParser, name: str) -> str:
    fn = "_" + name.replace("-", "_")
    commands, options, values, arguments = [], [], [], []
    for path, level in levels(parser):
        if level.commands:
            commands.append(f"        {_quote(path)}) echo {_quote(' '.join(level.commands))} ;;")
        options.append(f"        {_quote(path)}) echo {_quote(' '.join(level.options))} ;;")
        for option, kind in level.values.items():
            values.append(f"        {_quote(path + '|' + option)}) echo {_quote(kind)} ;;")
        if level.argument:
            arguments.append(f"        {_quote(path)}) echo {_quote(level.argument)} ;;")
    takes = "|".join(value_options(parser))
    return "\n".join(
        [
            f'{fn}_commands() {{\n    case "$1" in\n' + "\n".join(commands) + "\n    esac\n}",
            f'{fn}_options() {{\n    case "$1" in\n' + "\n".join(options) + "\n    esac\n}",
            f'{fn}_values() {{\n    case "$1|$2" in\n' + "\n".join(values) + "\n    esac\n}",
            f'{fn}_takes_value() {{\n    case "$1" in\n        {takes}) return 0 ;;\n'
            "    esac\n    return 1\n}",
            f'{fn}_arguments() {{\n    case "$1" in\n' + "\n".join(arguments) + "\n    esac\n}",
            f'{fn}_is_command() {{\n    case " $({fn}_commands "$1") " in\n'
            '        *" $2 "*) return 0 ;;\n    esac\n    return 1\n}',
        ]
    )


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# What both shells run: find the command path the words before the cursor name, then the
# words that may stand at the cursor (@WORDS@ and @CURRENT@ are the shell's own names).
_WALK = """\
    local cmdpath= skip= word i
    for ((i = @FIRST@; i < @CURRENT@; i++)); do
        word=${@WORDS@[i]}
        if [[ -n $skip ]]; then
            skip=
            continue
        fi
        case $word in
            --*=*) ;;
            -*) _@NAME@_takes_value "$word" && skip=1 ;;
            *) _@NAME@_is_command "$cmdpath" "$word" && cmdpath=${cmdpath:+$cmdpath }$word ;;
        esac
    done
    if [[ -n $skip ]]; then
        choices=$(_@NAME@_values "$cmdpath" "${@WORDS@[@CURRENT@-1]}")
    elif [[ $cur == -* ]]; then
        choices=$(_@NAME@_options "$cmdpath")
    else
        choices=$(_@NAME@_commands "$cmdpath")
        [[ -z $choices ]] && choices=$(_@NAME@_arguments "$cmdpath")
    fi
"""

_BASH = (
    """\
# bash completion for @NAME@, generated by '@NAME@ completion bash' from its own parser.
# Install: eval "$(@NAME@ completion bash)" in ~/.bashrc
@TABLES@

_@NAME@() {
    local cur=${COMP_WORDS[COMP_CWORD]} choices
    COMPREPLY=()
"""
    + _WALK.replace("@FIRST@", "1")
    .replace("@CURRENT@", "COMP_CWORD")
    .replace("@WORDS@", "COMP_WORDS")
    + """\
    if [[ $choices == @files ]]; then
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -f -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$choices" -- "$cur"))
    fi
}
complete -F _@NAME@ @NAME@
"""
)

_ZSH = (
    """\
#compdef @NAME@
# zsh completion for @NAME@, generated by '@NAME@ completion zsh' from its own parser.
# Install: eval "$(@NAME@ completion zsh)" in ~/.zshrc after compinit, or save it as
# _@NAME@ in a directory of $fpath.
@TABLES@

_@NAME@() {
    local cur=${words[CURRENT]} choices
"""
    + _WALK.replace("@FIRST@", "2").replace("@CURRENT@", "CURRENT").replace("@WORDS@", "words")
    + """\
    if [[ $choices == @files ]]; then
        _files
    elif [[ -n $choices ]]; then
        compadd -- ${=choices}
    fi
}

if [[ ${funcstack[1]} == _@NAME@ ]]; then
    _@NAME@ "$@"
else
    (( $+functions[compdef] )) || { autoload -Uz compinit && compinit -u; }
    compdef _@NAME@ @NAME@
fi
"""
)
