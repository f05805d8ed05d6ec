"""Review records a person signed stay theirs (docs/security/roles.md, "Signed records"): a BCF import signs what it
changes with the importer, changes and removes no one else's verified comment and says so, and still imports new
topics with the archive's authors, unverified. Deleting an issue, a comment or an IDS file is in the audit trail."""

from __future__ import annotations

import io
import json
import re
import uuid
import zipfile

import pytest

from accounts_app.models import AuditEvent, ProjectMember
from checks_app.models import IdsFile
from issues_app.models import Comment, Issue
from tests.accounts.people import person, post, project_with_models, signed_in
from tests.checks.conftest import fire_ids

pytestmark = pytest.mark.django_db

FAR_FUTURE = "2099-01-01T00:00:00Z"


@pytest.fixture
def team():
    """Project Tower with one model; olga owns it, rita reviews it."""
    project, models = project_with_models("Tower", models=1)
    people = {}
    for username, role in (("olga", "owner"), ("rita", "reviewer")):
        people[username] = person(username)
        ProjectMember.objects.create(project=project, user=people[username], role=role)
    return project, models[0], {name: signed_in(user) for name, user in people.items()}


def new_issue(client, model, title: str) -> str:
    return client.post(f"/api/v1/models/{model.id}/issues", {"issue": json.dumps({"title": title})}).json()["data"]["id"]


def new_comment(client, model, issue_id: str, text: str) -> str:
    answer = post(client, f"/api/v1/models/{model.id}/issues/{issue_id}/comments", {"text": text}).json()
    assert answer["code"] == 0, answer
    return answer["data"]["id"]


def exported(client, model) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(b"".join(client.get(f"/api/v1/models/{model.id}/issues.bcfzip").streaming_content)))
    return {name: archive.read(name) for name in archive.namelist()}


def imported(client, model, entries: dict[str, bytes]) -> dict:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as out:
        for name, data in entries.items():
            out.writestr(name, data)
    archive.seek(0)
    archive.name = "edited.bcfzip"
    answer = client.post(f"/api/v1/models/{model.id}/issues/bcf", {"file": archive}).json()
    assert answer["code"] == 0, answer
    return answer["data"]


def markup_name(entries: dict[str, bytes]) -> str:
    (name,) = [name for name in entries if name.endswith("/markup.bcf")]
    return name


def comment_edited(markup: str, guid: str, text: str) -> str:
    """The comment's text replaced and its date moved far ahead (which makes the topic newer than its issue)."""
    pattern = rf'(<Comment Guid="{guid}">\s*<Date>)[^<]*(</Date>.*?<Comment>)[^<]*(</Comment>)'
    edited, count = re.subn(pattern, rf"\g<1>{FAR_FUTURE}\g<2>{text}\g<3>", markup, flags=re.DOTALL)
    assert count == 1
    return edited


def comment_removed(markup: str, guid: str) -> str:
    removed, count = re.subn(rf'<Comment Guid="{guid}">.*?</Comment>\s*</Comment>\s*', "", markup, flags=re.DOTALL)
    assert count == 1
    return removed


def test_a_reviewers_import_keeps_the_owners_comment_says_so_and_imports_the_new_topic(team):
    _, model, clients = team
    issue_id = new_issue(clients["olga"], model, "Door too narrow")
    olgas = new_comment(clients["olga"], model, issue_id, "I approve nothing")
    entries = exported(clients["rita"], model)
    name = markup_name(entries)
    markup = comment_edited(entries[name].decode(), olgas, "I approve everything")
    markup = markup.replace("<CreationAuthor>olga</CreationAuthor>", "<CreationAuthor>mallory</CreationAuthor>")
    entries[name] = markup.encode()
    old_topic, new_topic = name.split("/")[0], str(uuid.uuid4())
    entries[f"{new_topic}/markup.bcf"] = (markup.replace(old_topic, new_topic).replace("Door too narrow", "Leak in the roof")
                                          .replace("<CreationAuthor>mallory</CreationAuthor>", "<CreationAuthor>someone</CreationAuthor>").encode())

    report = imported(clients["rita"], model, entries)

    assert [topic["title"] for topic in report["imported"]] == ["Leak in the roof"]
    (updated,) = report["updated"]
    assert any(olgas in note and "olga" in note for note in updated["notes"]), updated
    comment = Comment.objects.get(issue_id=issue_id, guid=olgas)
    assert (comment.text, comment.author, comment.author_verified) == ("I approve nothing", "olga", True)
    assert comment.date.year < 2099
    issue = Issue.objects.get(pk=issue_id)
    assert (issue.author, issue.author_verified) == ("olga", True)
    assert (issue.modified_author, issue.modified_author_verified) == ("rita", True)
    new = Issue.objects.get(model=model, title="Leak in the roof")
    assert (new.author, new.author_verified) == ("someone", False)
    copied = new.comments.get()
    assert (copied.author, copied.author_verified, copied.text) == ("olga", False, "I approve everything")


def test_an_import_removes_no_one_elses_verified_comment_and_changes_the_importers_own(team):
    _, model, clients = team
    issue_id = new_issue(clients["olga"], model, "Door too narrow")
    olgas = new_comment(clients["olga"], model, issue_id, "Please widen it")
    ritas = new_comment(clients["rita"], model, issue_id, "Agreed")
    entries = exported(clients["rita"], model)
    name = markup_name(entries)
    entries[name] = comment_edited(comment_removed(entries[name].decode(), olgas), ritas, "Agreed, to 90 cm").encode()

    report = imported(clients["rita"], model, entries)

    (updated,) = report["updated"]
    assert f"comment {ritas} changed" in updated["changes"] and f"comment {olgas} removed" not in updated["changes"]
    assert any(olgas in note for note in updated["notes"]), updated
    kept = Comment.objects.get(issue_id=issue_id, guid=olgas)
    assert (kept.text, kept.author, kept.author_verified) == ("Please widen it", "olga", True)
    own = Comment.objects.get(issue_id=issue_id, guid=ritas)
    assert (own.text, own.author, own.author_verified) == ("Agreed, to 90 cm", "rita", True)
    assert (own.modified_author, own.modified_author_verified) == ("rita", True)


def test_deleting_an_issue_or_a_comment_is_in_the_audit_trail(team):
    project, model, clients = team
    issue_id = new_issue(clients["olga"], model, "Door too narrow")
    guid = new_comment(clients["olga"], model, issue_id, "Please widen it")

    assert clients["rita"].delete(f"/api/v1/models/{model.id}/issues/{issue_id}/comments/{guid}").json()["code"] == 0
    assert clients["rita"].delete(f"/api/v1/models/{model.id}/issues/{issue_id}").json()["code"] == 0

    events = {event.action: event for event in AuditEvent.objects.filter(action__in=["comment.delete", "issue.delete"])}
    comment, issue = events["comment.delete"], events["issue.delete"]
    assert (comment.username, comment.object, comment.project_id, comment.detail["title"]) == ("rita", f"comment:{guid}", project.id, "Door too narrow")
    assert (issue.username, issue.object, issue.project_id, issue.detail["title"]) == ("rita", f"issue:{issue_id}", project.id, "Door too narrow")


def test_deleting_an_ids_file_is_in_the_audit_trail(team):
    project, _, clients = team
    put = clients["rita"].put(f"/api/v1/projects/{project.id}/ids/fire.ids", fire_ids(), content_type="application/xml")
    assert put.json()["code"] == 0, put.content

    assert clients["rita"].delete(f"/api/v1/projects/{project.id}/ids/fire.ids").json()["code"] == 0

    assert not IdsFile.objects.exists()
    event = AuditEvent.objects.get(action="ids-file.delete")
    assert (event.username, event.object, event.project_id, event.detail) == ("rita", "ids-file:fire.ids", project.id, {"title": "fire.ids"})
