from django.contrib.admin.utils import quote
import pytest

from issues_app.models import ChangeEntry, Issue, Override

pytestmark = pytest.mark.django_db


@pytest.fixture
def records(model):
    shot = Issue.objects.create(model=model, title="Crack in wall", entity_id="2O2Fr$t4X7Zf8NOew3FLOH", status="checking", provenance="AI", screenshot="issues/i_0123456789ab.png")
    plain = Issue.objects.create(model=model, title="Door swing", entity_id="3cUkl32yn9qRSPvBJVyWYp")
    Override.objects.create(model=model, entity_id="2O2Fr$t4X7Zf8NOew3FLOH", field="Name", value="W1")
    entry = ChangeEntry.objects.create(model=model, entity_id="2O2Fr$t4X7Zf8NOew3FLOH", field="Name", new_value="W1")
    return shot, plain, entry


def test_issue_admin_lists_filters_searches_and_shows_thumbnails(admin_client, model, records):
    shot, plain, _ = records
    page = admin_client.get("/admin/issues_app/issue/").content.decode()
    assert shot.title in page and plain.title in page
    assert f'<img src="/v1/models/{model.id}/issues/i_0123456789ab.png"' in page
    filtered = admin_client.get("/admin/issues_app/issue/?status__exact=checking&provenance__exact=AI").content.decode()
    assert shot.title in filtered and plain.title not in filtered
    searched = admin_client.get("/admin/issues_app/issue/?q=3cUkl32yn9qRSPvBJVyWYp").content.decode()
    assert plain.title in searched and shot.title not in searched


def test_change_log_and_overrides_are_read_only(admin_client, records):
    _, _, entry = records
    listing = admin_client.get("/admin/issues_app/changeentry/?operation__exact=update&field__exact=Name&provenance__exact=UI")
    assert listing.status_code == 200 and entry.id in listing.content.decode()
    detail = admin_client.get(f"/admin/issues_app/changeentry/{quote(entry.pk)}/change/").content.decode()
    assert 'name="_save"' not in detail
    response = admin_client.post(f"/admin/issues_app/changeentry/{quote(entry.pk)}/change/", {"new_value": "forged"})
    assert response.status_code == 403
    assert admin_client.get("/admin/issues_app/changeentry/add/").status_code == 403
    assert admin_client.get("/admin/issues_app/override/add/").status_code == 403
    assert admin_client.get("/admin/issues_app/override/?field__exact=Name").status_code == 200
    entry.refresh_from_db()
    assert entry.new_value == "W1"


def test_issue_admin_shows_the_comment_thread_inline(admin_client, model):
    from issues_app.models import Comment

    issue = Issue.objects.create(id="i_22c0ffee0000", model=model, title="Crack in wall")  # "_22" reads as '"' unquoted
    Comment.objects.create(issue=issue, author="anna", text="Please check the lintel")
    response = admin_client.get(f"/admin/issues_app/issue/{quote(issue.pk)}/change/")
    assert response.status_code == 200, (response.status_code, response.get("Location"))
    page = response.content.decode()
    assert "Please check the lintel" in page and "comments-TOTAL_FORMS" in page
    listing = admin_client.get("/admin/issues_app/issue/?priority=&q=Crack")
    assert listing.status_code == 200
