import time
from datetime import datetime

import pytest

from issues_app.models import Issue
from models_app.storage import model_dir
from tests.issues.conftest import png_bytes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

CAMERA = {"eye": [10, 5.5, -3], "look": [0, 0, 0], "up": [0, 1, 0]}
ISSUE = {"entityId": "2O2Fr$t4X7Zf8NOew3FLOH", "entityName": "Wall 1", "entityType": "IfcWall", "title": "Crack", "comment": "check"}


def test_create_with_defaults(post_issue, model):
    response = post_issue(model.id, ISSUE)
    assert response.status_code == 200
    issue = response.json()["data"]
    assert issue["id"].startswith("i_") and len(issue["id"]) == 14
    assert {k: issue[k] for k in ISSUE} == ISSUE
    assert (issue["status"], issue["author"], issue["provenance"]) == ("open", "local-user", {"source": "UI"})
    assert issue["screenshot"] == "" and issue["camera"] is None
    for key in ("createdAt", "updatedAt"):
        assert issue[key].endswith("Z") and datetime.fromisoformat(issue[key].replace("Z", "+00:00"))


def test_create_with_screenshot_camera_author_and_ai_provenance(post_issue, model, client):
    png = png_bytes()
    issue = {**ISSUE, "author": "agent", "provenance": {"source": "AI"}, "camera": CAMERA}
    data = post_issue(model.id, issue, ("shot.png", png, "image/png")).json()["data"]
    assert (data["author"], data["provenance"], data["camera"]) == ("agent", {"source": "AI"}, {k: [float(x) for x in v] for k, v in CAMERA.items()})
    assert data["screenshot"] == f"issues/{data['id']}.png"
    assert (model_dir(model.id) / data["screenshot"]).read_bytes() == png
    image = client.get(f"/v1/models/{model.id}/{data['screenshot']}")
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert b"".join(image.streaming_content) == png


def test_screenshot_is_anonymous_when_a_token_is_set(post_issue, model, client, viewer_config):
    data = post_issue(model.id, ISSUE, ("a.png", png_bytes(), "image/png")).json()["data"]
    viewer_config(apiToken="tok")
    assert client.get(f"/v1/models/{model.id}/{data['screenshot']}").status_code == 200
    assert client.get(f"/api/v1/models/{model.id}/issues").status_code == 401


@pytest.mark.parametrize(
    "issue, raw, message",
    [
        (None, "{not json", "not valid JSON"),
        (None, "[1, 2]", "JSON object"),
        ({**ISSUE, "title": ""}, None, "title"),
        ({k: v for k, v in ISSUE.items() if k != "title"}, None, "title"),
        ({**ISSUE, "provenance": {"source": "BOT"}}, None, "source"),
        ({**ISSUE, "provenance": "UI"}, None, "provenance"),
        ({**ISSUE, "camera": {"eye": [], "look": [0, 0, 0], "up": [0, 1, 0]}}, None, "eye"),
        ({**ISSUE, "camera": {"eye": [1, 2, "3"], "look": [0, 0, 0], "up": [0, 1, 0]}}, None, "eye"),
        ({**ISSUE, "camera": {"eye": [1, 2, 3], "look": [0, 0, 0]}}, None, "up"),
    ],
)
def test_invalid_issues_are_rejected_with_nothing_stored(post_issue, model, issue, raw, message):
    response = post_issue(model.id, issue, raw_issue=raw)
    assert (response.status_code, response.json()["code"]) == (400, 40001)
    assert message in response.json()["message"]
    assert Issue.objects.count() == 0


def test_missing_issue_part(api, model):
    response = api.post(f"/api/v1/models/{model.id}/issues", {"comment": "x"}, format="multipart")
    assert response.json()["code"] == 40001 and "'issue'" in response.json()["message"]


def test_jpeg_named_png_is_rejected(post_issue, model):
    jpeg = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 100
    response = post_issue(model.id, ISSUE, ("photo.png", jpeg, "image/png"))
    assert (response.status_code, response.json()["code"]) == (400, 40001)
    assert "PNG" in response.json()["message"]
    assert Issue.objects.count() == 0 and not (model_dir(model.id) / "issues").exists()


def test_six_megabyte_png_is_too_large(post_issue, model):
    big = png_bytes(padding=6 * 1024 * 1024)
    response = post_issue(model.id, ISSUE, ("big.png", big, "image/png"))
    assert (response.status_code, response.json()["code"]) == (400, 40002)
    assert Issue.objects.count() == 0 and not (model_dir(model.id) / "issues").exists()


def test_png_just_under_the_limit_is_accepted(post_issue, model):
    response = post_issue(model.id, ISSUE, ("ok.png", png_bytes(padding=5 * 1024 * 1024 - 200), "image/png"))
    assert response.json()["code"] == 0


def test_list_newest_first(post_issue, model, api):
    ids = []
    for title in ("a", "b", "c"):
        ids.append(post_issue(model.id, {**ISSUE, "title": title}).json()["data"]["id"])
    listed = api.get(f"/api/v1/models/{model.id}/issues").json()["data"]
    assert [i["id"] for i in listed] == ids[::-1]


def test_status_moves_and_edits(post_issue, model, api):
    issue = post_issue(model.id, ISSUE).json()["data"]
    url = f"/api/v1/models/{model.id}/issues/{issue['id']}"
    time.sleep(0.01)
    for status in ("checking", "resolved", "open"):
        data = api.patch(url, {"status": status}, format="json").json()["data"]
        assert data["status"] == status
    data = api.patch(url, {"title": "New", "comment": ""}, format="json").json()["data"]
    assert (data["title"], data["comment"], data["status"]) == ("New", "", "open")
    assert data["updatedAt"] > data["createdAt"]


@pytest.mark.parametrize(
    "body, message",
    [({"status": "closed"}, "status"), ({"title": ""}, "title"), ({"colour": "x"}, "unknown field(s) colour"), ([1], "JSON object")],
)
def test_invalid_patches_change_nothing(post_issue, model, api, body, message):
    issue = post_issue(model.id, ISSUE).json()["data"]
    response = api.patch(f"/api/v1/models/{model.id}/issues/{issue['id']}", body, format="json")
    assert (response.status_code, response.json()["code"]) == (400, 40001)
    assert message in response.json()["message"]
    stored = Issue.objects.get(pk=issue["id"])
    assert (stored.title, stored.status, stored.author) == ("Crack", "open", "local-user")


def test_malformed_json_body_on_patch(post_issue, model, api):
    issue = post_issue(model.id, ISSUE).json()["data"]
    response = api.generic("PATCH", f"/api/v1/models/{model.id}/issues/{issue['id']}", "{oops", content_type="application/json")
    assert (response.status_code, response.json()["code"]) == (400, 40001)


def test_delete_removes_issue_and_screenshot(post_issue, model, api, client):
    issue = post_issue(model.id, ISSUE, ("a.png", png_bytes(), "image/png")).json()["data"]
    path = model_dir(model.id) / issue["screenshot"]
    assert path.exists()
    assert api.delete(f"/api/v1/models/{model.id}/issues/{issue['id']}").json() == {"code": 0, "message": "ok", "data": None}
    assert not path.exists() and Issue.objects.count() == 0
    assert client.get(f"/v1/models/{model.id}/{issue['screenshot']}").status_code == 404


def test_unknown_model_and_issue(post_issue, model, api):
    assert post_issue("m_0000000000000000", ISSUE).json()["code"] == 40400
    assert api.get("/api/v1/models/m_0000000000000000/issues").status_code == 404
    for method in ("patch", "delete"):
        for issue_id in ("i_000000000000", "i_bad", "..%2F..%2Fx"):
            response = getattr(api, method)(f"/api/v1/models/{model.id}/issues/{issue_id}", {"status": "open"}, format="json")
            assert (response.status_code, response.json()["code"]) == (404, 40400), (method, issue_id)


@pytest.mark.parametrize(
    "name",
    ["..%2F..%2Fmodel.ifc", "..", "i_0123456789ab.PNG", "i_0123456789ab.png.bak", "x.png", "%2e%2e%2fmodel.ifc", "i_0123456789a.png", "model.ifc"],
)
def test_screenshot_names_off_pattern_answer_404_and_read_nothing(client, model, name, monkeypatch):
    (model_dir(model.id) / "model.ifc").write_text("secret")
    opened = []
    import builtins

    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda path, *a, **k: opened.append(str(path)) or real_open(path, *a, **k))
    response = client.get(f"/v1/models/{model.id}/issues/{name}")
    assert response.status_code == 404
    assert response.json()["code"] == 40400
    assert not [p for p in opened if str(model_dir(model.id)) in p]


def test_model_purge_removes_issues_and_screenshots_and_keeps_the_change_log(post_issue, model, api):
    post_issue(model.id, ISSUE, ("a.png", png_bytes(), "image/png"))
    api.put(f"/api/v1/models/{model.id}/entities/{ISSUE['entityId']}/properties", {"fields": {"Name": "X"}}, format="json")
    assert api.delete(f"/api/v1/models/{model.id}").json()["code"] == 0
    assert api.delete(f"/api/v1/trash/{model.id}").json()["code"] == 0
    from issues_app.models import ChangeEntry, Override

    assert (Issue.objects.count(), Override.objects.count(), ChangeEntry.objects.count()) == (0, 0, 1)
    assert not model_dir(model.id).exists()
