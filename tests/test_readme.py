"""Every code block of the README, and of the guides in docs/ it sends readers to, runs as written.

Each block runs in a fresh process and a fresh home. The README is the first read; the guides
hold what it leaves out, so their blocks are checked the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

import agentrecall
from agentrecall import PostgresStore, errors
from agentrecall.testing import ChatServer, Reply
from agentrecall.testing.postgres import TemporaryPostgres

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The guides that took over the README's longer material, code blocks included.
GUIDES = [
    "docs/stores.md",
    "docs/postgres.md",
    "docs/agents.md",
    "docs/cli.md",
    "docs/mcp.md",
    "docs/testing.md",
]
PAGES = [README, *((ROOT / guide).read_text(encoding="utf-8") for guide in GUIDES)]
BLOCKS = [
    block
    for page in PAGES
    for block in re.findall(r"^```(\w*)\n(.*?)^```", page, flags=re.MULTILINE | re.DOTALL)
]
BIN = Path(sys.executable).parent

# Runs a block as a module would run, with top-level ``await`` allowed as in an async REPL.
RUNNER = """
import ast, asyncio, sys
path = sys.argv[1]
code = compile(open(path, encoding="utf-8").read(), path, "exec",
               flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCKS if lang == language]


def run_python(source: str, cwd: Path, **variables: str) -> str:
    script = cwd / "block.py"
    script.write_text(source, encoding="utf-8")
    environment = {**os.environ, "AGENTRECALL_HOME": str(cwd / "home"), **variables}
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(script)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def quick_start(out: str, home: Path) -> None:
    score, _, content = out.strip().partition(" ")
    assert float(score) > 0 and content == "The user prefers aisle seats on long flights."
    assert [p.name for p in (home / "memory").iterdir()] == ["notes.db"]


def sync_store(out: str, home: Path) -> None:
    assert out == "The user is allergic to peanuts.\n"


def sqlite_store(out: str, home: Path) -> None:
    assert out == "1 ['update', 'delete'] 3\n"


def json_store(out: str, home: Path) -> None:
    assert out == "['User prefers dark mode in the IDE.']\n"
    assert json.loads((home.parent / "notes.json").read_text(encoding="utf-8"))[0]["metadata"] == {
        "source": "user"
    }


def buffer_memory(out: str, home: Path) -> None:
    assert out == "['user', 'assistant']\n"


def buffer_bytes(out: str, home: Path) -> None:
    assert out == "b'\\x89PNG'\n"


def meaning(out: str, home: Path) -> None:
    content, _, score = out.strip().rpartition(" ")
    assert content == "The user's favourite seat is by the window." and float(score) > 0.3


def postgres_store(out: str, home: Path) -> None:
    assert out == "True Prefers aisle seats 1\n"


def postgres_buffer(out: str, home: Path) -> None:
    assert out == "[{'role': 'user', 'content': 'Find a hotel in Lyon'}]\n"


def postgres_replica(out: str, home: Path) -> None:
    assert out == "Prefers aisle seats True\n"


def expiry_history(out: str, home: Path) -> None:
    assert out == "expire True\nTrue\n"


def strands_manager(out: str, home: Path) -> None:
    assert out == ""


def reconcile_settings(out: str, cwd: Path) -> None:
    assert out == ""


def manual_clock(out: str, cwd: Path) -> None:
    assert out == "gone after an hour that took no time\n"


# Each Python block, told by a line of it, with what its output must be.
CHECKS: dict[str, Callable[[str, Path], None]] = {
    'SQLiteStore(name="notes") as notes:': quick_start,
    "with SyncStore(SQLiteStore": sync_store,
    'SQLiteStore("memory.db") as store': sqlite_store,
    'SQLiteStore("expiry-history.db") as store': expiry_history,
    'notes = JsonFileStore(name="notes", path="notes.json")': json_store,
    'BufferMemory(max_messages=20, max_tokens=4000, path="conversations.db")': buffer_memory,
    'BufferMemory(path="strands-conversations.db")': buffer_bytes,
    "StrandsMemoryManager(stores=": strands_manager,
    'SQLiteStore("meaning.db", embedder=LocalEmbedder())': meaning,
    'PostgresStore(dsn, name="travel")': postgres_store,
    'BufferMemory(dsn=os.environ["DATABASE_URL"]': postgres_buffer,
    'read_dsn=os.environ["DATABASE_READ_URL"]': postgres_replica,
    "ManualClock() as clock": manual_clock,
    "ReconcileConfig(use_model=False": reconcile_settings,
}


def check_for(block: str) -> Callable[[str, Path], None] | None:
    found = [check for marker, check in CHECKS.items() if marker in block]
    assert len(found) <= 1
    return found[0] if found else None


# The agent loop needs a model server: test_agent_loop_runs_on_loopback runs it.
STANDALONE = [block for block in blocks("python") if "async def chat(" not in block]


@pytest.mark.parametrize("index", range(len(STANDALONE)))
def test_python_block_runs(index: int, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    block = STANDALONE[index]
    check = check_for(block)
    assert check is not None, f"README python block {index} has no check in test_readme.py"
    # A PostgreSQL example reads its server's URL from DATABASE_URL: a fresh database here.
    if "DATABASE_READ_URL" in block:
        # A real primary and its streaming standby, for this block alone.
        with TemporaryPostgres(durable=False) as primary, closing(primary.standby()) as standby:
            out = run_python(
                block, tmp_path, DATABASE_URL=primary.dsn, DATABASE_READ_URL=standby.dsn
            )
        check(out, tmp_path / "home")
        return
    variables = {}
    if "DATABASE_URL" in block:
        variables["DATABASE_URL"] = request.getfixturevalue("postgres_dsn")
    check(run_python(block, tmp_path, **variables), tmp_path / "home")


# Blocks with top-level ``await`` that need no server, as the README says to paste them.
REPL_BLOCKS = [
    block
    for block in STANDALONE
    if re.search(r"^(async with|await) ", block, flags=re.MULTILINE) and "DATABASE_URL" not in block
]


@pytest.mark.parametrize("index", range(len(REPL_BLOCKS)))
def test_await_block_runs_pasted_into_the_asyncio_repl(index: int, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "asyncio"],
        input="\n" + REPL_BLOCKS[index] + "\n",  # an empty line ends the last statement
        cwd=tmp_path,
        env={**os.environ, "AGENTRECALL_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # The REPL reports a failed statement on stderr and goes on, exiting 0 all the same.
    assert done.returncode == 0 and "Error" not in done.stderr, done.stderr
    assert "print(" not in REPL_BLOCKS[index] or done.stdout.strip(" >.\n"), done.stdout


def test_readme_says_how_to_run_await_blocks() -> None:
    assert REPL_BLOCKS
    for page in PAGES:
        if re.search(r"^```python\n(?:(?!^```).)*^(async with|await) ", page, re.M | re.S):
            assert "python -m asyncio" in page, page.splitlines()[0]


def test_the_readme_fits_a_first_read() -> None:
    assert len(README.splitlines()) <= 350
    # It links every guide whose blocks run here, and the API reference's pages.
    for guide in [*GUIDES, "docs/reference/index.md"]:
        assert f"]({guide}" in README, guide


def numbers(text: str) -> list[str]:
    return re.findall(r"\d[\d,]*(?:\.\d+)?", text)


def test_benchmark_headlines_come_from_the_results() -> None:
    section = README.split("\n## Benchmarks\n", 1)[1].split("\n## ", 1)[0]
    rows = [
        line for line in section.splitlines() if line.startswith("| `") or line.startswith("| L")
    ]
    # The results files, and docs/benchmarks.md for what was measured by hand.
    sources = [*(ROOT / "benchmarks" / "results").glob("*.md"), ROOT / "docs" / "benchmarks.md"]
    results = " ".join(path.read_text(encoding="utf-8") for path in sources)
    measured = {float(n.replace(",", "")) for n in numbers(results)}
    assert len(rows) > 10
    for row in rows:
        for cell in row.strip("|").split("|")[1:]:
            for figure in numbers(cell):
                places = len(figure.partition(".")[2])
                value = float(figure.replace(",", ""))
                assert any(round(m, places) == value for m in measured), (figure, row)


def respond(request: Any) -> Reply:
    if "JSON" in (request.system or ""):  # an extraction request
        return Reply.text(json.dumps(["The user is vegetarian and cooks dinner at home."]))
    recalled = (request.last_user_text or "").partition("<memory>")[2]
    return Reply.text("You are vegetarian." if "vegetarian" in recalled else "Noted!")


def test_agent_loop_runs_on_loopback(tmp_path: Path) -> None:
    (block,) = [b for b in blocks("python") if "async def chat(" in b]
    with ChatServer(responder=respond) as server:
        call = (
            "import asyncio\n"
            f"first = asyncio.run(chat({server.base_url!r}, 'm', ['I am vegetarian.', 'Hi'], '.'))"
            f"\nsecond = asyncio.run(chat({server.base_url!r}, 'm', ['Dinner ideas?'], '.'))"
            "\nprint(first, second)\n"
        )
        out = run_python(block + call, tmp_path)
    assert out == "['Noted!', 'Noted!'] ['You are vegetarian.']\n"


def test_the_two_commands_come_first() -> None:
    first = blocks("sh")[0]
    assert [line.split("#")[0].strip() for line in first.splitlines()] == ["make demo", "make test"]
    # Both run for real: `make test` runs them again in a fresh clone (scripts/clone-check).
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "scripts/clone-check" in makefile
    assert "make demo" in (ROOT / "scripts" / "clone-check").read_text(encoding="utf-8")


def test_make_test_builds_the_api_reference_strictly_before_the_tests() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    (goals, recipe) = re.findall(r"^test: (.*)\n\t(.*)$", makefile, flags=re.MULTILINE)[0]
    assert "docs" in goals.split() and "pytest" in recipe.split()
    assert "mkdocs build --strict" in makefile
    # Its output goes where git does not look.
    assert "build/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "site_dir: build/reference" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_install_block_names_real_extras() -> None:
    (install,) = [b for b in blocks("sh") if "pip install" in b]
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = pyproject.split("[project.optional-dependencies]\n", 1)[1].split("\n[", 1)[0]
    extras = re.findall(r"^(\w+) = ", section, flags=re.MULTILINE)
    named = re.findall(r"'\.\[([\w,]+)\]'", install)
    assert named and all(extra in extras for group in named for extra in group.split(","))
    assert "agentrecall --version" in install
    done = subprocess.run(
        [str(BIN / "agentrecall"), "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == f"agentrecall {agentrecall.__version__}"


COMMAND_BLOCKS = [b for b in blocks("bash") if b.startswith("id=$(agentrecall add")]


@pytest.mark.parametrize("index", range(len(COMMAND_BLOCKS)))
def test_command_line_block_runs(index: int, tmp_path: Path) -> None:
    commands = COMMAND_BLOCKS[index]
    (tmp_path / "data").symlink_to(ROOT / "data")
    environment = {
        **os.environ,
        "AGENTRECALL_HOME": str(tmp_path / "home"),
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands],
        cwd=tmp_path,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "The user prefers window seats" in done.stdout  # the history shows the update
    for made in ("memory.jsonl", "copy.db", "copy.json", "same.db"):
        assert made not in commands or (tmp_path / made).exists(), made
    assert len(json.loads((tmp_path / "copy.json").read_text(encoding="utf-8"))) == 2


def test_sql_block_grants_what_the_application_role_needs(
    private_postgres: TemporaryPostgres,
) -> None:
    """The grants run as the README gives them, after setup(); the role then uses the store."""
    (grants,) = blocks("sql")
    dsn = private_postgres.dsn

    async def use(url: str) -> list[str]:
        async with PostgresStore(url) as store:
            first = await store.add("Written by the application's role")
            assert (await store.add("Written by the application's role")).id == first.id
            return [hit.content for hit in await store.search("application role")]

    async def set_up() -> None:
        async with PostgresStore(dsn) as admin:
            await admin.setup()

    asyncio.run(set_up())
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(f'REVOKE CREATE ON DATABASE "{connection.info.dbname}" FROM PUBLIC')
        connection.execute(grants)
    app = psycopg.conninfo.make_conninfo(dsn, user="agentrecall_app", password="change-me")
    assert asyncio.run(use(app)) == ["Written by the application's role"]


def test_error_tree_matches_the_classes() -> None:
    (tree,) = [body for lang, body in BLOCKS if lang == "" and "AgentRecallError" in body]
    names = re.findall(r"^[├└─ ]*(\w+Error)\b", tree, flags=re.MULTILINE)
    assert names[0] == "AgentRecallError"
    for name in names[1:]:
        assert issubclass(getattr(errors, name), errors.AgentRecallError), name


def test_mcp_client_block_starts_a_server(tmp_path: Path) -> None:
    # The other JSON block (docs/mcp.md) shows a reply of add_memory, not a configuration.
    (config,) = [block for block in blocks("json") if "mcpServers" in block]
    server = json.loads(config)["mcpServers"]["memory"]
    assert server["command"] == "agentrecall"
    environment = {**os.environ, **server["env"], "AGENTRECALL_HOME": str(tmp_path)}
    # A stdio server whose client closes stdin at once serves nothing and exits cleanly.
    done = subprocess.run(
        [str(BIN / server["command"]), *server["args"]],
        stdin=subprocess.DEVNULL,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", ["README.md", *GUIDES, "docs/install.md", "docs/benchmarks.md"])
def test_relative_links_lead_to_a_file_and_heading(page: str) -> None:
    path = ROOT / page
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        file, _, fragment = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        assert linked.exists(), (page, target)
        if fragment:
            headings = re.findall(r"^#+ (.*)$", linked.read_text(encoding="utf-8"), flags=re.M)
            assert fragment in {anchor(h) for h in headings}, (page, target)
