"""The README's quick start runs as written, in a fresh process, against a fresh home."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _quick_start_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


def test_the_quick_start_stores_and_recalls(tmp_path: Path) -> None:
    blocks = _quick_start_blocks()
    assert len(blocks) == 2
    script = "\n".join(blocks) + "\nprint([hit.content for hit in hits])\n"
    environment = {**os.environ, "AGENTRECALL_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith(" The user prefers aisle seats on long flights.")
    assert float(lines[0].split()[0]) > 0
    assert lines[-1].startswith("['The user is allergic to peanuts.'")  # best hit first
    assert sorted(p.name for p in (tmp_path / "memory").iterdir()) == ["notes.db"]
