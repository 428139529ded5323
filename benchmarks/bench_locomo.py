"""Benchmark: LoCoMo dev recall of every search mode, through the CLI a user runs.

Each mode is one run of ``agentrecall eval locomo data/locomo/locomo-dev.json --store sqlite
--mode MODE [--neighbours] --embedder local --json`` in a child process (this checkout's
``agentrecall``), so the figures are exactly what the command prints: every metric overall,
without the adversarial category, and per category, with the time per query (the query's
embedding included). A first table puts the modes' R@10 side by side, overall and on multi-hop
questions, with what each ingredient added.

Data: the LoCoMo dev split (Maharana, Lee, Tulyakov, Bansal, Barbieri, Fang, ACL 2024,
arXiv 2402.17753, CC BY-NC 4.0).

Run: ``.venv/bin/python benchmarks/bench_locomo.py``. Writes ``benchmarks/results/locomo.md``
and prints it. Takes a few minutes (the model embeds every conversation in each mode that
needs it).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentrecall.evaluation.locomo import Row, table

ROOT = Path(__file__).resolve().parent.parent
DEV = Path("data") / "locomo" / "locomo-dev.json"
RESULTS = Path(__file__).resolve().parent / "results" / "locomo.md"
MODES: list[tuple[str, list[str]]] = [
    ("keyword", ["--mode", "keyword"]),
    ("semantic", ["--mode", "semantic"]),
    ("hybrid", ["--mode", "hybrid"]),
    ("keyword + neighbours", ["--mode", "keyword", "--neighbours"]),
    ("hybrid + neighbours", ["--mode", "hybrid", "--neighbours"]),
]
TARGETS = {"keyword": 0.63, "hybrid": 0.70, "hybrid + neighbours": 0.77}


def command(flags: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "agentrecall",
        "eval",
        "locomo",
        str(DEV),
        "--store",
        "sqlite",
        *flags,
        "--embedder",
        "local",
        "--json",
    ]


def run(flags: list[str]) -> list[Row]:
    result = subprocess.run(
        command(flags), cwd=ROOT, capture_output=True, text=True, check=False, timeout=3600
    )
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(flags)} failed:\n{result.stderr[-3000:]}")
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return [
        Row(
            row["group"],
            row["questions"],
            {k: v for k, v in row.items() if k not in ("group", "questions")},
        )
        for row in rows
    ]


def _r10(rows: list[Row], group: str) -> float:
    return next(row.means["R@10"] for row in rows if row.group == group)


def summary(found: dict[str, list[Row]]) -> list[str]:
    before = {
        "hybrid": "keyword",
        "hybrid + neighbours": "hybrid",
        "keyword + neighbours": "keyword",
    }
    lines = [
        "| mode | R@10 overall | added | R@10 multi-hop | target | |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, rows in found.items():
        overall = _r10(rows, "overall")
        base = before.get(name)
        added = f"{overall - _r10(found[base], 'overall'):+.3f} on {base}" if base else "–"
        target = TARGETS.get(name)
        verdict = "–" if target is None else ("met" if overall >= target else "NOT met")
        goal = f"≥ {target}" if target is not None else "–"
        lines.append(
            f"| {name} | {overall:.3f} | {added} | {_r10(rows, '1 multi-hop'):.3f} | {goal} | "
            f"{verdict} |"
        )
    return lines


def main() -> None:
    began = time.perf_counter()
    found: dict[str, list[Row]] = {}
    for name, flags in MODES:
        found[name] = run(flags)
        print(f"  {name} done", file=sys.stderr)
    lines = [
        "# LoCoMo dev recall, every search mode",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; run took "
        f"{time.perf_counter() - began:.0f} s; load average {os.getloadavg()[0]:.2f} at the end "
        "(2 shared cores: the times per query are noisy).",
        f"* `agentrecall eval locomo {DEV} --store sqlite --mode MODE [--neighbours] "
        "--embedder local` (LocalEmbedder: all-MiniLM-L6-v2 int8 ONNX), default settings; "
        "written by `benchmarks/bench_locomo.py`.",
        "* Data: LoCoMo dev split (Maharana et al., ACL 2024, arXiv 2402.17753, CC BY-NC 4.0).",
        "",
        "## Recall@10 by mode",
        "",
        *summary(found),
    ]
    for name, rows in found.items():
        lines += ["", f"## {name}", "", table(rows)]
    text = "\n".join(lines) + "\n"
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
