"""Version records carry their author: the author of the save that made them (real sandbox)."""

from tests.edit_service.conftest import example


def test_version_items_carry_the_author_of_their_save(editor):
    editor.stage(script=example("small_house"), note="initial")
    assert editor.save(note="first", author="ana")["author"] == "ana"
    editor.stage(params={**editor.params(), "fire_rating": "F90"})
    editor.save(note="second")  # no author given: the edit service's default
    versions = editor.version_list()["versions"]
    assert [(v["version"], v["author"]) for v in versions] == [("v1", "ana"), ("v2", "local-user")]
    assert set(versions[0]) == {"version", "createdAt", "author"}
