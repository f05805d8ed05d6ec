"""A save retried with the same Idempotency-Key (the web client's retry after a network error) writes its change-log
entries once: the edit service answers the version the first attempt made, the gateway writes that version's
entries only when they are missing."""

import json

import pytest

from issues_app.models import ChangeEntry
from issues_app import services as issues_services
from tests.proxy.test_proxy_faults import SAVE_ANSWER, fake, model  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


def save(api, model_id, key):
    return api.post(f"/api/v1/models/{model_id}/script/save", {"note": "n"}, format="json", HTTP_IDEMPOTENCY_KEY=key).json()


def test_a_save_retried_with_its_key_writes_its_change_log_entries_once(api, fake, model, monkeypatch):  # noqa: F811
    fake.body = SAVE_ANSWER
    real_record = issues_services.record_version_changes

    def interrupted(**kwargs):
        raise ConnectionError("the gateway lost its database between the edit service and the change log")

    monkeypatch.setattr(issues_services, "record_version_changes", interrupted)
    assert "warning" in save(api, model.id, "save-1")["data"]  # saved upstream, change log not written
    assert ChangeEntry.objects.count() == 0
    monkeypatch.setattr(issues_services, "record_version_changes", real_record)

    fake.body = {**SAVE_ANSWER, "replayed": True}  # the edit service's answer to a repeated requestId
    for _ in range(2):
        assert save(api, model.id, "save-1")["code"] == 0
    assert sorted(ChangeEntry.objects.values_list("field", flat=True)) == ["Name", "Pset_WallCommon.IsExternal"]
    assert {json.loads(body).get("requestId") for method, path, body in fake.received} == {"save-1"}
