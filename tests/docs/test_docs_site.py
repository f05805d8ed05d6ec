"""The documentation: the site builds with --strict (as .ci/run builds it), --strict really fails on a broken link,
an unknown anchor, a nav entry without its page and a page left out of the nav, and README.md stays a short tour
whose links all lead to pages that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README_MAX_LINES = 160


def build(config: Path, site_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site_dir)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"},
    )


@pytest.fixture
def docs_copy(tmp_path):
    """A copy of mkdocs.yml and docs/ to break on purpose."""
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    return tmp_path


def test_the_site_builds_strictly(tmp_path):
    result = build(REPO / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "decisions" / "0003-fail-closed-sandbox" / "index.html").is_file()


@pytest.mark.heavy
@pytest.mark.parametrize(
    "breakage, warning",
    [
        ("link", "is not found among documentation files"),
        ("anchor", "does not contain an anchor"),
        ("nav entry", "which is not found in the documentation files"),
        ("page outside the nav", 'not included in the "nav" configuration'),
    ],
)
def test_strict_build_fails_on(docs_copy, breakage, warning):
    docs = docs_copy / "docs"
    if breakage == "link":
        with (docs / "testing.md").open("a") as page:
            page.write("\nSee [the missing page](no-such-page.md).\n")
    elif breakage == "anchor":
        with (docs / "testing.md").open("a") as page:
            page.write("\nSee [configuration](operations/configuration.md#no-such-section).\n")
    elif breakage == "nav entry":
        config = docs_copy / "mkdocs.yml"
        config.write_text(config.read_text() + "  - Gone: gone.md\n")
    else:
        (docs / "orphan.md").write_text("# A page nobody links\n")

    result = build(docs_copy / "mkdocs.yml", docs_copy / "site")

    assert result.returncode != 0
    assert warning in result.stderr


def test_readme_is_a_short_tour_whose_links_exist():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES
    for command in ("make run", "make test"):
        assert command in readme
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    relative = [target for target in targets if not re.match(r"[a-z]+://", target)]
    assert relative, "README links into docs/"
    missing = [target for target in relative if not (REPO / target).exists()]
    assert missing == []
