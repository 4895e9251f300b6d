"""The documentation keeps up with the code: API pages, CLI reference, gallery, README.

The site itself is built with warnings as errors in CI (``sphinx-build -W``, .ci/run);
these checks are the parts a build would not notice: a public name missing from the API
reference, an example sphinx-gallery cannot title, a README that grew or changed its
commands.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: The public modules whose every exported name has an API page.
API_MODULES = ["tabmia", "tabmia.attacks", "tabmia.metrics", "tabmia.thresholds",
               "tabmia.audit", "tabmia.experiment", "tabmia.persons", "tabmia.slices",
               "tabmia.game", "tabmia.report", "tabmia.gate", "tabmia.named", "tabmia.testing",
               "tabmia.plausibility", "tabmia.shadow", "tabmia.backends", "tabmia.perturb",
               "tabmia.datasets", "tabmia.dp", "tabmia.benchmark", "tabmia.whatif",
               "tabmia.reconstruction", "tabmia.schema", "tabmia.mlflow", "tabmia.settings"]


def api_pages() -> dict[str, list[str]]:
    """``module -> names`` listed in the autosummary blocks of docs/api/*.rst."""
    out: dict[str, list[str]] = {}
    for page in sorted((DOCS / "api").glob("*.rst")):
        text = page.read_text()
        module = re.search(r"^\.\. module:: (\S+)$", text, re.M)
        if module is None:
            continue
        names = out.setdefault(module.group(1), [])
        for block in re.findall(r"^\.\. autosummary::\n((?:   .*\n|\n)+)", text, re.M):
            names += [line.strip() for line in block.splitlines()
                      if line.strip() and not line.strip().startswith(":")]
    return out


@pytest.mark.parametrize("module", API_MODULES)
def test_every_public_name_has_an_api_page(module):
    if module == "tabmia.mlflow":
        pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    listed = api_pages().get(module)
    assert listed is not None, f"docs/api has no page with '.. module:: {module}'"
    exported = importlib.import_module(module).__all__
    missing = sorted(set(exported) - set(listed))
    stale = sorted(set(listed) - set(exported))
    assert not missing, f"{module}.__all__ names without an API page: {missing}"
    assert not stale, f"docs/api lists names {module}.__all__ does not export: {stale}"
    assert len(listed) == len(set(listed)), f"a name is listed twice for {module}"


def test_api_index_links_every_module_page():
    index = (DOCS / "api" / "index.rst").read_text()
    pages = {p.stem for p in (DOCS / "api").glob("*.rst")} - {"index"}
    assert pages and all(re.search(rf"^   {p}$", index, re.M) for p in pages)


def test_cli_reference_is_generated_from_the_parser():
    page = (DOCS / "cli.rst").read_text()
    assert ".. argparse::" in page
    assert ":module: tabmia.cli" in page and ":func: build_parser" in page
    from tabmia.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert {"audit", "benchmark", "dpaudit"} <= set(commands)
    for name in ("audit", "benchmark", "dpaudit"):  # each has flags to list
        assert len(commands[name]._actions) > 3


@pytest.mark.parametrize("script", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.stem)
def test_example_has_a_gallery_title(script):
    """sphinx-gallery titles a page with the docstring's first line, underlined with '='."""
    doc = ast.get_docstring(ast.parse(script.read_text()), clean=False)
    assert doc is not None, f"{script.name} has no module docstring"
    lines = doc.lstrip("\n").splitlines()
    assert len(lines) > 2 and lines[1] == "=" * len(lines[0]) and not lines[2].strip(), (
        f"{script.name}: the docstring must open with a title line underlined with '='")


README = (ROOT / "README.md").read_text()
THE_TWO_COMMANDS = [
    'python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/tabmia audit',
    'python3 -m venv .venv && .venv/bin/pip install ".[test]" && .venv/bin/python -m pytest',
]


def test_readme_is_short_and_keeps_the_two_commands():
    assert len(README.splitlines()) < 150
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    assert [b.strip() for b in blocks[:2]] == THE_TWO_COMMANDS
    # .ci/run runs the second one verbatim
    assert THE_TWO_COMMANDS[1] in (ROOT / ".ci" / "run").read_text()


def test_readme_example_runs_and_its_numbers_hold(capsys):
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    printed = [float(x) for x in capsys.readouterr().out.split()]
    quoted = [float(x) for x in re.findall(r"# .*?: (0\.\d+)", code)]
    assert len(printed) == len(quoted) == 2
    assert printed == pytest.approx(quoted, abs=5e-4)


def python_blocks(page: Path) -> list[str]:
    """The ```python blocks of a Markdown page, in order."""
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)


def test_getting_started_snippets_run_as_written(tmp_path, monkeypatch, capsys):
    """Getting started's Python blocks run one after the other, as a reader pastes them
    into one session (later blocks use the names of earlier ones), in an empty folder
    (one writes the files its command-line snippet audits)."""
    from tabmia.datasets import DataNotFoundError

    blocks = python_blocks(DOCS / "getting_started.md")
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    for i, code in enumerate(blocks, 1):
        try:
            exec(compile(code, f"docs/getting_started.md, python block {i}", "exec"), namespace)
        except DataNotFoundError as err:  # only a snippet that needs an absent data set
            pytest.skip(f"python block {i} needs a data set the data home lacks: {err}")
    out = capsys.readouterr().out
    assert "of the training records" in out and "TPR (own threshold)" in out
    # the command-line snippet after the last block reads these files
    assert {"model.joblib", "train.csv", "holdout.csv"} <= {p.name for p in tmp_path.iterdir()}
    commands = re.findall(r"^```bash\n(.*?)^```", (DOCS / "getting_started.md").read_text(),
                          re.S | re.M)
    assert any("--model-file model.joblib --train train.csv --population holdout.csv" in c
               for c in commands)


def test_landing_page_shows_the_install_line_the_ten_lines_and_a_report():
    """The landing page's install command and example are the README's (whose example
    ``test_readme_example_runs_and_its_numbers_hold`` runs), and its picture exists."""
    index = (DOCS / "index.md").read_text()
    assert THE_TWO_COMMANDS[0] in index
    readme_code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    assert python_blocks(DOCS / "index.md") == [readme_code]
    pictures = re.findall(r"```\{image\} (\S+)", index)
    report = (DOCS / "user_guide" / "report.md").read_text()
    pictures_of_report = re.findall(r"```\{image\} (\S+)", report)
    assert pictures and pictures_of_report
    for picture in pictures:
        assert (DOCS / picture).is_file() and (DOCS / picture).stat().st_size < 300_000
    for picture in pictures_of_report:
        path = (DOCS / "user_guide" / picture).resolve()
        assert path.is_file() and path.stat().st_size < 300_000
