"""``agentrecall completion bash|zsh``: the scripts, sourced in the real shells."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentrecall.cli.completion import script, value_options
from agentrecall.cli.main import main, parser

BASH_DRIVER = """
source "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_agentrecall
printf '%s\\n' "${COMPREPLY[@]}"
"""

ZSH_DRIVER = """
compdef() { :; }
compadd() {  # matches the current word as zsh's own compadd does
    [[ $1 == -- ]] && shift
    local word
    for word in "$@"; do [[ $word == ${words[CURRENT]}* ]] && print -- $word; done
    return 0
}
_files() { print -- @files; }
source "$1"
shift
words=("$@")
CURRENT=${#words}
_agentrecall
"""


def written(tmp_path: Path, shell: str, capsys: pytest.CaptureFixture[str]) -> Path:
    capsys.readouterr()
    assert main(["completion", shell]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    path = tmp_path / f"agentrecall.{shell}"
    path.write_text(out, encoding="utf-8")
    return path


def complete(shell: str, path: Path, *words: str) -> list[str]:
    driver = BASH_DRIVER if shell == "bash" else ZSH_DRIVER
    done = subprocess.run(
        [shell, "-c", driver, shell, str(path), "agentrecall", *words],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=path.parent,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return [line for line in done.stdout.splitlines() if line]


SHELLS = [
    pytest.param(shell, marks=pytest.mark.skipif(shutil.which(shell) is None, reason=f"no {shell}"))
    for shell in ("bash", "zsh")
]


@pytest.mark.parametrize("shell", SHELLS)
def test_commands_options_and_values_complete(
    shell: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = written(tmp_path, shell, capsys)
    (tmp_path / "notes.txt").write_text("x")
    assert complete(shell, path, "se") == ["search"]
    assert set(complete(shell, path, "")) >= {"add", "clear", "completion", "history", "stats"}
    assert complete(shell, path, "search", "--mi") == ["--min-score"]
    assert complete(shell, path, "search", "--mode", "") == ["keyword", "semantic", "hybrid"]
    assert complete(shell, path, "--db", "x.db", "sta") == ["stats"]
    assert complete(shell, path, "--store", "work", "list", "--ol") == ["--oldest"]
    assert complete(shell, path, "eval", "") == ["locomo"]
    assert complete(shell, path, "eval", "locomo", "--store", "") == ["json", "sqlite"]
    assert complete(shell, path, "list", "--user-id", "") == []
    assert "--user-id" in complete(shell, path, "clear", "--")
    assert "--yes" in complete(shell, path, "clear", "--")
    assert complete(shell, path, "completion", "") == ["bash", "zsh"]
    assert complete(shell, path, "sup") == ["supersede"]
    assert {"--also", "--reason", "--valid-from", "--metadata"} <= set(
        complete(shell, path, "supersede", "--")
    )
    for command in ("search", "list", "count"):
        assert complete(shell, path, command, "--as") == ["--as-of"]
        assert complete(shell, path, command, "--va") == ["--valid-at"]
        assert complete(shell, path, command, "--inc") == ["--include-superseded"]
    assert complete(shell, path, "get", "--in") == ["--include-superseded"]
    assert complete(shell, path, "add", "--valid-") == ["--valid-from", "--valid-until"]
    files = complete(shell, path, "add", "--file", "no")
    assert files == (["notes.txt"] if shell == "bash" else ["@files"])


@pytest.mark.parametrize("shell", SHELLS)
def test_the_script_parses_and_defines_its_hook(
    shell: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = written(tmp_path, shell, capsys)
    check = subprocess.run([shell, "-n", str(path)], capture_output=True, timeout=60, check=False)
    assert check.returncode == 0, check.stderr
    # zsh: the script starts the completion system itself when .zshrc has not.
    hook = "complete -p agentrecall" if shell == "bash" else "print ${_comps[agentrecall]}"
    done = subprocess.run(
        [shell, "-c", f'eval "$(cat "$0")"; {hook}', str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "HOME": str(tmp_path), "ZDOTDIR": str(tmp_path)},
    )
    expected = "complete -F _agentrecall agentrecall" if shell == "bash" else "_agentrecall"
    assert expected in done.stdout, done.stderr


def test_the_script_follows_the_parser() -> None:
    top = parser()
    text = script(top, "bash")
    for option in value_options(top):
        assert option in text
    assert "'search|--mode') echo 'keyword semantic hybrid'" in text


def test_an_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "fish"]) == 2
    assert "argument shell: invalid choice: 'fish'" in capsys.readouterr().err
    assert main(["completion"]) == 2


def test_the_console_command_prints_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentrecall", "completion", "bash"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("# bash completion for agentrecall")
