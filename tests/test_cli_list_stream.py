"""``agentrecall list`` streams the store: the same output as one read of it, in flat memory."""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from test_cli import Cli

from agentrecall import SQLiteStore, SyncStore
from agentrecall.cli import listing, tables
from agentrecall.cli.fields import scope_label
from agentrecall.cli.main import main
from agentrecall.types import MemoryRecord

SCOPES: list[dict[str, str]] = [
    {},
    {"user_id": "ana\tbel"},
    {"user_id": "bo", "session_id": "s1\x1b[2J"},
    {"agent_id": "a-rather-long-agent-name", "user_id": "ana", "session_id": "s22"},
]
"""Scopes of different widths, so that the scope column's width is set by rows far apart."""


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTRECALL_HOME", str(home))
    monkeypatch.delenv("COLUMNS", raising=False)
    return home


def fill(path: Path, count: int) -> None:
    """Store ``count`` memories in ``path``: scopes and contents vary along the store."""
    with SyncStore(SQLiteStore(path)) as store:
        # Half the store in the widest scope, after the rest: a page far from the first sets
        # the scope column's width.
        rest = count - count // 2
        sizes = [rest // 3 + (k < rest % 3) for k in range(3)] + [count // 2]
        for i, (scope, wanted) in enumerate(zip(SCOPES, sizes, strict=True)):
            view = store.scope(**scope) if scope else store
            # Line breaks, NULs and escapes are shown escaped, in their cell's width.
            items = [
                (f"memory {i}-{n}\n\x00 " + "word " * (n % 7), {"n": n % 5}) for n in range(wanted)
            ]
            view.add_many(items)


@pytest.fixture(scope="module")
def store_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("listing") / "m.db"
    fill(path, 3_000)
    return path


def every(path: Path, **bounds: Any) -> list[MemoryRecord]:
    """Every memory matching ``bounds``, oldest first, in one read."""
    with SyncStore(SQLiteStore(path, writable=False)) as store:
        records: list[MemoryRecord] = store.list(**bounds)
        return records


def shown(text: str) -> str:
    """``text`` as the table shows it: escapes for what a terminal would act on."""
    return text.replace("\n", "\\n").replace("\x00", "\\x00").replace("\x1b", "\\x1b")


def expected_table(records: list[MemoryRecord]) -> str:
    """The table of ``records`` as one read of the whole store shows it, piped (no cut)."""
    rows = []
    for r in records:
        scope = ",".join(
            f"{name}={value}"
            for name, value in (
                ("user", r.user_id),
                ("agent", r.agent_id),
                ("session", r.session_id),
            )
            if value is not None
        )
        rows.append([r.created_at, r.id, shown(scope), shown(r.content)])
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "".join(
        "  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  " + row[3] + "\n" for row in rows
    )


def expected_json(records: list[MemoryRecord]) -> str:
    data = [
        {
            "id": r.id,
            "content": r.content,
            "created_at": r.created_at,
            "metadata": r.metadata,
            "updated_at": r.updated_at,
            "expires_at": r.expires_at,
            "user_id": r.user_id,
            "agent_id": r.agent_id,
            "session_id": r.session_id,
            "invalidated_at": r.invalidated_at,
            "superseded_by": r.superseded_by,
            "valid_from": r.valid_from,
            "valid_until": r.valid_until,
        }
        for r in records
    ]
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


@pytest.mark.parametrize("page", [7, 1_000, 5_000])
@pytest.mark.parametrize(
    ("argv", "pick"),
    [
        (["--all"], lambda rs: rs[::-1]),
        (["--all", "--oldest"], lambda rs: rs),
        (["--offset", "10", "--limit", "2500"], lambda rs: rs[::-1][10:2510]),
        (["--oldest", "--offset", "990", "--limit", "1500"], lambda rs: rs[990:2490]),
    ],
)
def test_list_output_is_one_read_s_output(
    store_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    page: int,
    argv: list[str],
    pick: Any,
) -> None:
    monkeypatch.setattr(listing, "PAGE", page)
    records = every(store_file)
    shown = pick(records)
    offset = int(argv[argv.index("--offset") + 1]) if "--offset" in argv else 0
    more = len(records) - offset - len(shown)
    hint = (
        f"{more} more memories: --offset {offset + len(shown)} shows the next page, --all every one"
    )
    cli = Cli(capsys, ("--db", str(store_file)))
    code, out, err = cli("--json", "list", *argv)
    assert (code, out) == (0, expected_json(shown))
    assert err == (f"agentrecall: note: {hint}\n" if more else "")
    code, out, err = cli("list", *argv)
    assert (code, out, err) == (0, expected_table(shown) + (f"… {hint}\n" if more else ""), "")


def test_a_filtered_list_is_one_read_s_output(
    store_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "PAGE", 100)
    shown = every(store_file, filter={"n": 3})[::-1]
    cli = Cli(capsys, ("--db", str(store_file)))
    filtered = ("list", "--all", "--filter", '{"n": 3}')
    assert cli.ok("--json", *filtered) == expected_json(shown)
    assert cli.ok(*filtered) == expected_table(shown)


def test_a_list_cut_to_the_terminal_is_one_read_s_output(
    store_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "PAGE", 250)
    monkeypatch.setenv("COLUMNS", "90")
    table = [[r.created_at, r.id, scope_label(r), r.content] for r in every(store_file)[::-1]]
    cli = Cli(capsys, ("--db", str(store_file)))
    assert cli.ok("list", "--all") == "\n".join(tables.rows(table, fit=90)) + "\n"


def test_an_empty_list_in_json_is_an_empty_array(tmp_path: Path, capsys: Any) -> None:
    cli = Cli(capsys, ("--db", str(tmp_path / "m.db")))
    cli.add("only one")
    assert cli.ok("--json", "list", "--all", "--filter", '{"none": 1}') == "[]\n"
    assert cli.ok("list", "--all", "--filter", '{"none": 1}') == "no memories match\n"


def peak_of_listing(path: Path, out: Path, *argv: str) -> int:
    """The most memory ``agentrecall list`` held (traced allocations), stdout in ``out``."""
    with out.open("w") as stdout:
        saved = sys.stdout
        sys.stdout = stdout  # a real file: the output goes to its descriptor, not to memory
        tracemalloc.start()
        try:
            assert main(["--db", str(path), "list", *argv]) == 0
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            sys.stdout = saved
    return peak


@pytest.mark.parametrize("argv", [["--all"], ["--all", "--json"]], ids=["table", "json"])
def test_list_all_holds_a_page_not_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.setattr(listing, "PAGE", 500)
    small, large = tmp_path / "small.db", tmp_path / "large.db"
    fill(small, 2_000)
    fill(large, 20_000)
    out = tmp_path / "out"
    small_peak = peak_of_listing(small, out, *argv)
    large_peak = peak_of_listing(large, out, *argv)
    if "--json" in argv:
        assert len(json.loads(out.read_text())) == 20_000
    else:
        assert out.read_text().count("\n") == 20_000
    # Ten times the memories, the same pages: holding the store would take ten times as much.
    assert large_peak < small_peak * 1.3, (small_peak, large_peak)
