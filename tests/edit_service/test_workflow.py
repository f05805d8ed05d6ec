"""Staging, runs, saves, versions, rollback and diffs through the engine (real sandbox, real IFC)."""

import json

import pytest

from edit_service.engine.errors import Conflict, Invalid, NotFound, RunFailed, SandboxUnavailable
from edit_service.engine.sandbox import Sandbox, SandboxLimits
from edit_service.engine.staging import MAX_STATES
from edit_service.engine.store import read_json
from edit_service.engine.workflow import Editor
from tests.edit_service.conftest import MODEL_ID, example

pytestmark = pytest.mark.heavy

FAILING = "PARAMS = {'n': 1}\n\ndef build(params, out_path):\n    import sys\n    sys.stderr.write('x' * 5000)\n    raise RuntimeError('boom at the end')\n"


def without_header(path) -> list[str]:
    return [line for line in path.read_text().splitlines() if not line.startswith("FILE_NAME")]


def test_stage_run_save_cycle(editor, data_dir):
    state = editor.stage(script=example("small_house"), note="initial")
    assert (state["source"], state["version"], state["ran"]) == ("staging", None, False)
    result = editor.run()
    assert result["ok"] and result["elements"] == 13 and result["semanticDiff"] is None
    ifc = data_dir / "models" / MODEL_ID / "model.ifc"
    assert "IFCWALL" in ifc.read_text()
    assert editor.script_state()["ran"] is True
    saved = editor.save(note="first")
    assert saved["version"] == "v1" and saved["note"] == "first" and saved["semanticDiff"] is None
    assert editor.version_list()["current"] == "v1"
    assert editor.script_state()["source"] == "version"  # staging is consumed by the save


def test_params_only_put_rewrites_the_params_literal_in_place(editor):
    original = example("small_house")
    editor.stage(script=original)
    params = {**editor.params(), "wall_height": 3.5}
    editor.stage(params=params)
    rewritten, _ = editor.current_script()
    assert rewritten.replace('"wall_height": 3.5', '"wall_height": 3.0') == original
    assert editor.params()["wall_height"] == 3.5


def test_params_are_read_without_running(editor):
    script = "PARAMS = {'n': 2, 'label': 'x'}\nraise SystemExit('would fail if run')\n\ndef build(params, out_path):\n    pass\n"
    editor.stage(script=script)
    assert editor.params() == {"n": 2, "label": "x"}


@pytest.mark.parametrize(
    "script, message",
    [
        ("PARAMS = {'a': 1\n", "syntax error"),
        ("def build(params, out_path):\n    pass\n", "PARAMS"),
        ("PARAMS = {'a': 1 + 1}\n\ndef build(params, out_path):\n    pass\n", "literal"),
        ("PARAMS = {'a': 1}\n", r"build\(params, out_path\)"),
        ("", "empty"),
    ],
)
def test_contract_violations_are_refused_and_nothing_is_staged(editor, script, message):
    with pytest.raises(Invalid, match=message):
        editor.stage(script=script)
    assert not editor.files.staging.exists()


def test_exactly_one_of_script_and_params(editor):
    with pytest.raises(Invalid, match="exactly one"):
        editor.stage(script="x", params={})
    with pytest.raises(Invalid, match="exactly one"):
        editor.stage()
    with pytest.raises(Invalid, match="stage a script first"):
        editor.stage(params={"a": 1})


def test_undo_redo_and_the_redo_branch(editor):
    scripts = [f"PARAMS = {{'n': {n}}}\n\ndef build(params, out_path):\n    pass\n" for n in range(4)]
    for script in scripts[:3]:
        editor.stage(script=script)
    editor.undo()
    assert editor.current_script()[0] == scripts[1]
    editor.redo()
    assert editor.current_script()[0] == scripts[2]
    editor.undo()
    editor.undo()
    with pytest.raises(Conflict, match="nothing to undo"):
        editor.undo()
    editor.stage(script=scripts[3])  # new step after undo drops the redo branch
    assert editor.current_script()[0] == scripts[3]
    with pytest.raises(Conflict, match="nothing to redo"):
        editor.redo()
    editor.undo()
    assert editor.current_script()[0] == scripts[0]


def test_staging_keeps_at_most_ten_states_and_survives_restart(editor, data_dir, sandbox):
    for n in range(15):
        editor.stage(script=f"PARAMS = {{'n': {n}}}\n\ndef build(params, out_path):\n    pass\n")
    summary = editor.script_state()["staging"]
    assert summary == {"steps": MAX_STATES, "cursor": MAX_STATES - 1, "canUndo": True, "canRedo": False}
    for _ in range(MAX_STATES - 1):
        editor.undo()
    restarted = Editor(data_dir, sandbox, MODEL_ID)  # a new process reads the persisted chain
    assert restarted.params() == {"n": 15 - MAX_STATES}
    with pytest.raises(Conflict):
        restarted.undo()


def test_staging_diff_between_steps(editor):
    for n in (1, 2, 3):
        editor.stage(script=f"PARAMS = {{'n': {n}, 'k': 'a'}}\n\ndef build(params, out_path):\n    pass\n")
    default = editor.staging_diff(None, None)
    assert (default["from"], default["to"]) == (1, 2)
    assert default["params"]["changed"] == {"n": {"old": 2, "new": 3}}
    explicit = editor.staging_diff(0, 2)
    assert explicit["params"]["changed"] == {"n": {"old": 1, "new": 3}}
    assert "-PARAMS = {'n': 1" in explicit["unified"] and "+PARAMS = {'n': 3" in explicit["unified"]
    with pytest.raises(Invalid, match="outside"):
        editor.staging_diff(0, 7)


def test_failed_run_changes_nothing_and_returns_the_last_2kb(editor, data_dir):
    editor.stage(script=example("small_house"))
    editor.run()
    ifc = data_dir / "models" / MODEL_ID / "model.ifc"
    before = ifc.read_bytes()
    editor.stage(script=FAILING)
    with pytest.raises(RunFailed) as failed:
        editor.run()
    assert "RuntimeError: boom at the end" in failed.value.detail
    assert len(failed.value.detail) < 2200
    assert ifc.read_bytes() == before
    assert editor.current_script()[0] == FAILING  # staging kept


def test_failed_save_creates_no_version_and_keeps_staging(editor):
    editor.stage(script=FAILING)
    with pytest.raises(RunFailed):
        editor.save(note="should not exist")
    assert editor.version_list() == {"versions": [], "current": None}
    assert editor.script_state()["source"] == "staging"


def test_invalid_ifc_output_is_refused(editor):
    script = (
        "import ifcopenshell\nPARAMS = {'n': 1}\n\ndef build(params, out_path):\n"
        "    f = ifcopenshell.file(schema='IFC4')\n"
        "    f.create_entity('IfcWall', GlobalId='bad')\n"  # invalid GlobalId, no OwnerHistory issue in IFC4
        "    f.write(out_path)\n"
    )
    editor.stage(script=script)
    with pytest.raises(RunFailed, match="IFC validation"):
        editor.run()


def test_versions_rollback_and_only_the_latest_ifc_materialised(editor):
    editor.stage(script=example("small_house"))
    editor.save(note="v1")
    editor.stage(params={**editor.params(), "fire_rating": "F90", "name": "House B"})
    second = editor.save(note="v2")
    assert second["version"] == "v2"
    assert second["semanticDiff"] == {"added": 0, "removed": 0, "changed": 6}  # 4 walls, project and building
    changed_fields = {c["field"] for item in second["diff"]["changed"] for c in item["changes"]}
    assert changed_fields == {"Pset_WallCommon.FireRating", "Name"}
    assert editor.versions.ifc_path("v1") is None and editor.versions.ifc_path("v2") is not None
    assert [v["version"] for v in editor.version_list()["versions"]] == ["v1", "v2"]

    rolled = editor.rollback("v1")
    assert rolled["rolledBackTo"] == "v1" and rolled["semanticDiff"]["changed"] == 6
    assert editor.params()["fire_rating"] == "F30"
    third = editor.save(note="back to v1")
    assert third["version"] == "v3"
    assert editor.script_list()[2]["params"]["fire_rating"] == "F30"
    with pytest.raises(NotFound):
        editor.rollback("v9")


def test_older_ifc_is_rebuilt_from_its_script_and_cached(editor, data_dir):
    editor.stage(script=example("small_house"))
    editor.save()
    v1_ifc = without_header(editor.versions.ifc_path("v1"))
    editor.stage(params={**editor.params(), "length": 12.0})
    editor.save()
    rebuilt = editor.version_ifc("v1")
    assert rebuilt.parent.name == "cache"
    assert without_header(rebuilt) == v1_ifc  # same script, same IFC
    assert editor.version_ifc("v1") == rebuilt


def test_same_script_and_params_give_the_same_ifc(editor, data_dir):
    editor.stage(script=example("tower"))
    editor.run()
    ifc = data_dir / "models" / MODEL_ID / "model.ifc"
    first = without_header(ifc)
    editor.run()
    assert without_header(ifc) == first


def test_tower_params_scale_the_building(editor):
    editor.stage(script=example("tower"))
    small = editor.run()["elements"]
    editor.stage(params={**editor.params(), "storeys": 6, "bays_x": 4})
    bigger = editor.run()
    assert bigger["elements"] > 2 * small
    assert bigger["semanticDiff"]["added"] == bigger["elements"] - small


def test_discard_goes_back_to_the_saved_version(editor, data_dir):
    editor.stage(script=example("small_house"))
    editor.save()
    saved = without_header(data_dir / "models" / MODEL_ID / "model.ifc")
    editor.stage(params={**editor.params(), "name": "Changed"})
    editor.run()
    assert without_header(data_dir / "models" / MODEL_ID / "model.ifc") != saved
    assert editor.discard() == {"discarded": True, "current": "v1"}
    assert without_header(data_dir / "models" / MODEL_ID / "model.ifc") == saved
    assert editor.script_state()["source"] == "version"


def test_script_diff_of_versions(editor):
    editor.stage(script=example("small_house"))
    editor.save()
    editor.stage(params={**editor.params(), "wall_height": 2.8, "extra": "yes"})
    editor.save()
    diff = editor.script_diff("v1", "v2")
    assert diff["params"] == {"added": {"extra": "yes"}, "removed": {}, "changed": {"wall_height": {"old": 3.0, "new": 2.8}}}
    assert diff["stats"]["added"] >= 1 and diff["stats"]["removed"] >= 1
    assert diff["unified"].startswith("--- v1\n+++ v2\n")
    with pytest.raises(NotFound):
        editor.script_diff("v1", "v3")


def test_uploaded_model_is_taken_over_with_bootstrap_and_alignment(editor, uploaded_model):
    original = (uploaded_model / "model.ifc").read_bytes()
    editor.stage(script=example("small_house"))
    assert (uploaded_model / "bootstrap.ifc").read_bytes() == original
    saved = editor.save()
    assert saved["alignment"]["added"] == 13 and saved["alignment"]["removed"] > 0
    editor.stage(params={**editor.params(), "name": "again"})
    assert editor.save()["alignment"]["added"] == 13
    assert (uploaded_model / "bootstrap.ifc").read_bytes() == original


def test_discard_before_any_version_restores_the_upload(editor, uploaded_model):
    original = (uploaded_model / "model.ifc").read_bytes()
    editor.stage(script=example("small_house"))
    editor.run()
    assert (uploaded_model / "model.ifc").read_bytes() != original
    editor.discard()
    assert (uploaded_model / "model.ifc").read_bytes() == original


def test_refusal_without_sandbox_has_no_side_effect(data_dir):
    broken = Editor(data_dir, Sandbox(SandboxLimits(bwrap="/missing/bwrap")), MODEL_ID)
    broken.stage(script=example("small_house"))
    staging_before = broken.files.staging.read_bytes()
    with pytest.raises(SandboxUnavailable):
        broken.run()
    with pytest.raises(SandboxUnavailable):
        broken.save()
    assert broken.files.staging.read_bytes() == staging_before
    assert not (data_dir / "models" / MODEL_ID / "model.ifc").exists()
    assert broken.version_list()["versions"] == []


def test_unknown_model_and_bad_ids(data_dir, sandbox):
    with pytest.raises(NotFound):
        Editor(data_dir, sandbox, "m_ffffffffffffffff").script_state()
    with pytest.raises(NotFound):
        Editor(data_dir, sandbox, "../../etc").script_state()


def test_history_records_saved_changes(editor):
    editor.stage(script=example("small_house"))
    editor.save()
    editor.stage(params={**editor.params(), "fire_rating": "F60"})
    editor.save(author="ana", provenance="AI")
    entries = read_json(editor.files.history)
    assert len(entries) == 4
    entry = entries[0]
    assert entry["id"].startswith("e_") and len(entry["id"]) == 14
    assert (entry["author"], entry["provenance"], entry["operation"], entry["version"]) == ("ana", {"source": "AI"}, "update", "v2")
    assert entry["changes"] == [{"field": "Pset_WallCommon.FireRating", "oldValue": "F30", "newValue": "F60"}]


def test_version_pair_diffs_are_cached_and_current_diffs_are_not(editor):
    editor.stage(script=example("small_house"))
    editor.save()
    editor.stage(params={**editor.params(), "fire_rating": "F60"})
    editor.save()
    cache = editor.files.cache_dir / "diff-v1-v2.json"
    first = editor.semantic_diff("v1", "v2")
    assert read_json(cache) == first and len(first["changed"]) == 4
    cache.write_text(json.dumps({**first, "changed": []}))  # a cached result is served as is
    assert editor.semantic_diff("v1", "v2")["changed"] == []
    current = editor.semantic_diff("v1", "current")
    assert len(current["changed"]) == 4
    assert not list(editor.files.cache_dir.glob("diff-*current*"))
    with pytest.raises(Invalid, match="only target may be current"):
        editor.semantic_diff("current", "v1")
    with pytest.raises(NotFound):
        editor.semantic_diff("v1", "v7")
