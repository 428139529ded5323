"""Benchmark: the peak memory of ``agentrecall list --all``, which streams the store.

For each size in ``--sizes``, a store of that many LoCoMo memories is listed whole, as a
table and with ``--json``, beside ``export`` (which has always streamed), each a process of
its own whose peak resident set size is read as ``bench_cli.py`` reads it. With
``--baseline SRC`` the same commands also run with ``PYTHONPATH=SRC``, another checkout's
``src`` (an older release), in the same run.

Run: ``.venv/bin/python benchmarks/bench_list.py [--sizes 10000 100000] [--baseline SRC]``.
Writes ``benchmarks/results/list.md`` and prints the same text. Data: ``benchmarks/corpus.py``
(LoCoMo dev, CC BY-NC 4.0).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_cli import build, measure

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "list.md"
COMMANDS = {
    "list --all": ["list", "--all"],
    "list --all --json": ["list", "--all", "--json"],
    "export": ["export", "-o", "{out}"],
}


def built(path: Path, size: int, source: str | None) -> Path:
    """Fill a new store at ``path`` by the code under ``source`` (this checkout's: None).

    Each version lists a store its own code wrote: an older one refuses a newer schema.
    """
    if source is None:
        asyncio.run(build(path, size))
        return path
    fill = (
        "import asyncio, sys; from pathlib import Path; from bench_cli import build; "
        "asyncio.run(build(Path(sys.argv[1]), int(sys.argv[2])))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, str(HERE)])}
    subprocess.run([sys.executable, "-c", fill, str(path), str(size)], env=env, check=True)
    return path


def run(store: Path, out: Path, source: str | None) -> dict[str, dict[str, float]]:
    """Measure each command on ``store``, with ``source`` first on the path if given."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = source
    figures = {}
    for name, arguments in COMMANDS.items():
        command = [sys.executable, "-m", "agentrecall", "--db", str(store)]
        command += [argument.format(out=out) for argument in arguments]
        figures[name] = measure(command, env)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--baseline", metavar="SRC", help="another checkout's src directory")
    args = parser.parse_args()
    versions = {"this checkout": None} | ({"baseline": args.baseline} if args.baseline else {})
    lines = [
        "# `agentrecall list --all`: peak memory",
        "",
        f"`benchmarks/bench_list.py`, {dt.date.today()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs. Peak RSS of each command's process, MB (wall seconds).",
        "",
        "| memories | code | " + " | ".join(COMMANDS) + " |",
        "|---:|---|" + "---:|" * len(COMMANDS),
    ]
    with tempfile.TemporaryDirectory() as directory:
        for size in args.sizes:
            for label, source in versions.items():
                store = built(Path(directory) / f"m{size}-{len(label)}.db", size, source)
                figures = run(store, Path(directory) / "out.jsonl", source)
                cells = [f"{f['peak_rss_mb']:.0f} ({f['seconds']:.1f} s)" for f in figures.values()]
                lines.append(f"| {size:,} | {label} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
