"""Django admin of automated review: IDS files, checks (read-only records), pinned failures."""

from django.contrib.admin.utils import quote
import pytest

from checks_app.models import Check, IdsDocument, IdsFile

pytestmark = pytest.mark.django_db


def test_checks_and_ids_files_in_the_admin(admin_client, make_model, project):
    model = make_model()
    document = IdsDocument.objects.create(sha256="a" * 64, content="<ids/>", size=6, title="Fire <b>ratings</b>", specifications=1)
    IdsFile.objects.create(project=project, name="fire.ids", document=document)
    check = Check.objects.create(model=model, version="current", product_key="k", ids=[{"name": "fire.ids", "sha256": "a" * 64}], cache_key="c", status="failed", error="boom")
    listing = admin_client.get("/admin/checks_app/check/?status__exact=failed").content.decode()
    assert check.id in listing
    detail = admin_client.get(f"/admin/checks_app/check/{quote(check.id)}/change/")
    assert detail.status_code == 200 and "boom" in detail.content.decode() and 'name="_save"' not in detail.content.decode()
    assert admin_client.get("/admin/checks_app/check/add/").status_code == 403
    files = admin_client.get("/admin/checks_app/idsfile/?q=fire").content.decode()
    assert "fire.ids" in files and "Fire &lt;b&gt;ratings&lt;/b&gt;" in files
    assert admin_client.get("/admin/checks_app/pinnedfailure/").status_code == 200
