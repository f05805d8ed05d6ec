"""Script diffs stay bounded: the changed region is matched line by line only within a work budget, beyond it
shown as replaced as a whole, and the diff is still a correct patch either way."""

import difflib
import subprocess
import sys
from pathlib import Path
from unittest import mock

from hypothesis import given, settings, strategies as st

from edit_service.engine import scripts

LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "PARAMS = {}\n", "x = 1\n", ""]), max_size=40)


def _apply_with_patch(tmp_path: Path, old: str, unified: str) -> str:
    """Applies the diff with GNU patch, the way a user would."""
    target = tmp_path / "script.py"
    target.write_text(old)
    subprocess.run(["patch", "--quiet", "--force", str(target)], input=unified.encode(), check=True, capture_output=True)
    return target.read_text()


@settings(max_examples=60, deadline=None)
@given(old=LINES, new=LINES)
def test_within_the_budget_it_is_difflibs_diff(old, new):
    old_text, new_text = "".join(old), "".join(new)
    result = scripts.script_diff(old_text, new_text, "v1", "v2")
    assert result["approximate"] is False
    assert result["unified"] == "".join(difflib.unified_diff(old_text.splitlines(True), new_text.splitlines(True), "v1", "v2"))


@settings(max_examples=60, deadline=None)
@given(old=st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n"]), min_size=1, max_size=30),
       new=st.lists(st.sampled_from(["a\n", "b\n", "c\n", "e\n"]), min_size=1, max_size=30))
def test_beyond_the_budget_the_whole_region_diff_is_a_correct_patch(tmp_path_factory, old, new):
    old_text, new_text = "".join(old), "".join(new)
    with mock.patch.object(scripts, "DIFF_LINE_PAIR_BUDGET", 0):
        result = scripts.script_diff(old_text, new_text, "v1", "v2")
    head, tail = scripts._common_ends(old, new)
    removed, added = len(old) - head - tail, len(new) - head - tail
    # a pure insertion or deletion costs difflib nothing and keeps its exact diff
    assert result["approximate"] is (removed * added > 0)
    assert (result["stats"]["removed"], result["stats"]["added"]) == (removed, added)
    if result["unified"]:
        assert _apply_with_patch(tmp_path_factory.mktemp("p"), old_text, result["unified"]) == new_text


def test_two_huge_repetitive_scripts_are_diffed_in_bounded_time(tmp_path):
    """Two 100,000-line scripts of 100 repeated distinct lines: difflib alone runs for hours. The subprocess's time
    limit only guards the suite; the result says the diff is approximate and is still a correct patch."""
    program = """
import json, sys
from edit_service.engine import scripts
old = "".join(f"line_{i % 100} = {i % 100}\\n" for i in range(100_000))
new = "".join(f"line_{(i * 7) % 100} = {(i * 7) % 100}\\n" for i in range(100_000))
result = scripts.script_diff(old, new, "v1", "v2")
print(json.dumps({"approximate": result["approximate"], "stats": result["stats"], "size": len(result["unified"])}))
"""
    done = subprocess.run([sys.executable, "-c", program], cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"approximate": true' in done.stdout and '"oldLines": 100000' in done.stdout


