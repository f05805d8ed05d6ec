"""An IDS file whose exact bytes this process has validated before is not validated again (checks_app.services.
ids_files.ValidatedIds): the same answer, the same stored document, the same check result; invalid files are
validated every time; the memory it keeps is bounded."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from checks_app.engine import ids_schema
from checks_app.services import ids_files
from checks_app.services.ids_files import ValidatedIds, validated_ids
from tests.checks.conftest import EXAMPLE_IDS, fire_ids

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def validations(monkeypatch):
    """The calls of validate_ids made through the services (each call's bytes)."""
    calls = []
    original = ids_files.validate_ids
    monkeypatch.setattr(ids_files, "validate_ids", lambda data: calls.append(data) or original(data))
    return calls


def test_an_upload_seen_before_is_not_validated_again_and_checks_the_same(api, make_model, run_checks, validations):
    model = make_model(fire_ratings={"A": "REI60"})
    results = []
    for number in range(3):  # a new upload name each time, so no earlier check answers from the cache
        parts = {"ids": [SimpleUploadedFile(f"fire-{number}.ids", fire_ids())]}
        started = api.post(f"/api/v1/models/{model.id}/checks", parts, format="multipart").json()
        assert started["code"] == 0 and started["data"]["cached"] is False, started
        run_checks()
        check = api.get(f"/api/v1/models/{model.id}/checks/{started['data']['checkId']}").json()["data"]
        assert check["status"] == "done", check
        results.append(check)
    assert validations == [fire_ids()]  # the first upload only
    assert len({check["ids"][0]["sha256"] for check in results}) == 1
    same = {json.dumps(check["result"], sort_keys=True).replace(f"fire-{number}.ids", "fire.ids") for number, check in enumerate(results)}
    assert len(same) == 1  # the whole result, but for the upload's name
    assert [[spec["status"] for spec in check["result"]["specifications"]] for check in results] == [["fail"]] * 3


def test_the_same_bytes_put_again_are_not_validated_again_but_other_bytes_are(project, put_ids, validations):
    assert put_ids("fire.ids", fire_ids()).json()["data"]["specifications"] == 1
    assert put_ids("copy.ids", fire_ids()).json()["data"]["specifications"] == 1
    assert put_ids("basics.ids", EXAMPLE_IDS.read_bytes()).json()["data"]["specifications"] == 13
    assert validations == [fire_ids(), EXAMPLE_IDS.read_bytes()]


def test_an_invalid_file_is_validated_and_refused_every_time(project, put_ids, validations):
    invalid = fire_ids().replace(b'minOccurs="0"', b'minOccurs="none"')
    answers = [put_ids("fire.ids", invalid).json() for _ in range(2)]
    assert [answer["code"] for answer in answers] == [40001, 40001]
    assert answers[0]["message"] == answers[1]["message"] and "line 6" in answers[0]["message"]
    assert validations == [invalid, invalid]
    assert len(validated_ids._entries) == 0


def test_what_it_keeps_is_bounded_in_entries_and_text(monkeypatch):
    monkeypatch.setattr(ids_files, "validate_ids", lambda data: ids_schema.IdsDocumentInfo(text=data.decode(), title="", specifications=1))
    kept = ValidatedIds(max_entries=2, max_chars=10)
    for data in (b"aaaa", b"bbbb", b"cccc"):
        kept.get(data)
    assert [info.text for info in kept._entries.values()] == ["bbbb", "cccc"]  # the least recently used left
    kept.get(b"bbbb")
    kept.get(b"dddddd")  # 4 + 6 chars: "cccc" leaves, "bbbb" was used last
    assert [info.text for info in kept._entries.values()] == ["bbbb", "dddddd"] and kept._chars == 10
    kept.get(b"x" * 11)  # larger than the whole bound: answered, not kept
    assert [info.text for info in kept._entries.values()] == ["bbbb", "dddddd"]
