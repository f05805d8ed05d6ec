"""Accounts in the web client, in a real Chromium against the real stack: the page sends a person without a session
to the sign-in page and back, the header menu's API tokens dialog makes a token that works over HTTP (and stops
working once revoked), and a reviewer of a project sees the build script but none of the controls that change it."""

import json
import urllib.error
import urllib.request

import pytest

from tests.browser.conftest import manage_shell, wait_model_open

pytestmark = pytest.mark.e2e

PASSWORDS = {"ada": "ada's long password 1", "rita": "rita's long password 2", "paul": "paul's long password 3"}
SHARE_SECRET = "bms_a-share-link-secret-made-by-the-test-0123456789"

MAKE_PEOPLE = """
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from accounts_app.models import Account, ProjectMember, ShareLink
from accounts_app.secrets import sha256
User = get_user_model()
ada = User.objects.create_superuser("ada", password={ada!r})
Account.objects.update_or_create(user=ada, defaults={{"role": "admin", "display_name": "Ada Lovelace"}})
rita = User.objects.create_user("rita", password={rita!r})
Account.objects.update_or_create(user=rita, defaults={{"role": "user", "display_name": "Rita Reviewer"}})
ProjectMember.objects.create(project_id={project_id!r}, user=rita, role="reviewer")
User.objects.create_user("paul", password={paul!r})
ShareLink.objects.create(project_id={project_id!r}, secret_sha256=sha256({share!r}), expires_at=timezone.now() + timedelta(days=1))
"""


@pytest.fixture(scope="module")
def people(web_stack):
    """A project with a script-built model made in the open mode, then the first accounts (which switch accounts on):
    an admin, a reviewer member of the project, a user of no project; and a share link of the project. -> the model's id."""
    project = web_stack.api("POST", "/api/v1/chat/projects", json={"title": "Signed", "kind": "ifc"}).json()["data"]
    model_id = project["models"][0]
    assert web_stack.wait_model(model_id)["status"] == "ready"
    manage_shell(web_stack, MAKE_PEOPLE.format(project_id=project["projectId"], share=SHARE_SECRET, **PASSWORDS))
    assert web_stack.api("GET", "/api/v1/models").status_code == 401  # accounts are on: nobody anonymous any more
    return model_id


def http_get(stack, path, token):
    request = urllib.request.Request(stack.url + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def sign_in_through_the_page(page, stack, username, place="/"):
    """Opens the web client at `place` without a session: it goes to the sign-in page; the form brings it back."""
    page.page.goto(stack.url + place)
    page.wait_for_url("**/sign-in?next=*")
    page.fill("[data-testid=sign-in-username]", username)
    page.fill("[data-testid=sign-in-password]", PASSWORDS[username])
    page.click("[data-testid=sign-in-submit]")
    page.wait_for_function("document.body && document.body.dataset.app === 'ready'", timeout=60_000)
    page.locator("[data-testid=account-menu]").wait_for()


def test_sign_in_then_make_use_and_revoke_a_token(page, web_stack, people):
    page.page.goto(web_stack.url + "/")
    page.wait_for_url("**/sign-in?next=*")
    page.fill("[data-testid=sign-in-username]", "ada")
    page.fill("[data-testid=sign-in-password]", "not the password")
    page.click("[data-testid=sign-in-submit]")
    assert "The user name or the password is wrong." in page.locator("[data-testid=sign-in-error]").inner_text()
    page.shot("wrong-password")

    sign_in_through_the_page(page, web_stack, "ada")
    assert page.url.rstrip("/") == web_stack.url
    assert page.locator("[data-testid=account-name]").inner_text() == "Ada Lovelace"
    assert page.locator("[data-testid=account-role]").inner_text() == "admin"
    page.locator("[data-testid=model-item]").first.wait_for()  # the session's calls are answered
    page.shot("signed-in")

    page.click("[data-testid=account-summary]")
    page.click("[data-testid=account-tokens]")
    dialog = page.locator("[data-testid=tokens-dialog]")
    dialog.wait_for()
    page.fill("[data-testid=token-name]", "nightly export")
    page.select_option("[data-testid=token-scope]", "read")
    page.click("[data-testid=token-create]")
    secret_box = page.locator("[data-testid=token-secret]")
    page.wait_for_function("document.querySelector('[data-testid=token-secret]').value.startsWith('bmr_')")
    secret = secret_box.input_value()
    row = page.locator("[data-testid=token-item]", has_text="nightly export")
    row.wait_for()
    page.shot("token-made")

    status, me = http_get(web_stack, "/api/v1/auth/me", secret)
    assert status == 200 and me["data"]["username"] == "ada" and me["data"]["via"] == "token"
    status, models = http_get(web_stack, "/api/v1/models", secret)
    assert status == 200 and people in [model["id"] for model in models["data"]]

    page.once("dialog", lambda confirm: confirm.accept())
    row.locator("[data-testid=token-revoke]").click()
    page.locator("[data-testid=token-item].revoked", has_text="nightly export").wait_for()
    page.shot("token-revoked")
    status, refused = http_get(web_stack, "/api/v1/auth/me", secret)
    assert status == 401 and refused["code"] == 40100

    page.click("[data-testid=tokens-close]")
    page.click("[data-testid=account-summary]")
    page.click("[data-testid=sign-out]")
    page.wait_for_url("**/sign-in")
    page.page.goto(web_stack.url + "/")
    page.wait_for_url("**/sign-in?next=*")  # the session is gone


def test_a_reviewer_sees_the_script_but_not_its_save(page, web_stack, people):
    sign_in_through_the_page(page, web_stack, "rita", place=f"/#model={people}")
    wait_model_open(page)
    page.wait_for_function(f"document.body.dataset.capabilitiesOf === '{people}'")
    assert page.locator("[data-testid=account-role]").inner_text() == "user"
    page.click("[data-tab=script]")
    page.locator(".cm-content").wait_for()
    page.locator("[data-testid=script-state]", has_text="Saved").wait_for()
    page.locator("[data-testid=script-read-only]").wait_for()
    page.shot("reviewer-script")
    for control in ("save", "run", "undo", "discard", "stage-script", "save-note"):
        assert page.locator(f"[data-testid={control}]").is_hidden(), f"{control} is shown to a reviewer"
    page.locator("details.versions-box summary").click()
    page.locator("[data-testid=version-item]").first.wait_for()
    assert page.locator("[data-testid=version-rollback]").first.is_hidden()
    assert page.locator("[data-testid=delete-model]").first.is_hidden()  # deleting is the owner's

    page.click("[data-tab=issues]")
    assert page.locator("[data-testid=issue-search]").is_visible()
    assert page.locator("[data-testid=create-issue]").is_visible()  # a reviewer writes issues
    page.shot("reviewer-issues")


def test_change_the_password_in_the_dialog(page, web_stack, people):
    sign_in_through_the_page(page, web_stack, "paul")
    assert page.locator("[data-testid=account-name]").inner_text() == "paul"  # no display name: the user name
    page.click("[data-testid=account-summary]")
    page.click("[data-testid=account-password]")
    page.fill("[data-testid=password-old]", "not my password")
    page.fill("[data-testid=password-new]", "paul's newer password 4")
    page.fill("[data-testid=password-repeat]", "paul's newer password 4")
    page.click("[data-testid=password-change]")
    error = page.locator("[data-testid=password-error]")
    error.wait_for()
    assert error.inner_text().startswith("oldPassword:")
    page.fill("[data-testid=password-old]", PASSWORDS["paul"])
    page.click("[data-testid=password-change]")
    page.locator("[data-testid=password-dialog]").wait_for(state="hidden")
    page.shot("password-changed")
    page.reload()
    page.locator("[data-testid=account-menu]").wait_for()  # the session outlived the change

    page.click("[data-testid=account-summary]")
    page.click("[data-testid=sign-out]")
    page.wait_for_url("**/sign-in")
    page.fill("[data-testid=sign-in-username]", "paul")
    page.fill("[data-testid=sign-in-password]", "paul's newer password 4")
    page.click("[data-testid=sign-in-submit]")
    page.locator("[data-testid=account-menu]").wait_for()


def test_a_share_link_opens_its_project_without_an_account(page, web_stack, people):
    page.page.goto(f"{web_stack.url}/s/{SHARE_SECRET}")
    page.wait_for_function("document.body && document.body.dataset.app === 'ready'", timeout=60_000)
    wait_model_open(page)  # the project's first model, opened from #project=
    assert "/sign-in" not in page.url
    assert page.locator("[data-testid=model-title]").inner_text() == "Signed.ifc"
    assert page.locator("[data-testid=account-menu]").is_hidden()
    assert page.locator("[data-testid=upload-button]").is_hidden()  # a guest uploads nothing
    page.shot("share-link")
    page.page.goto(f"{web_stack.url}/s/bms_not-a-link")
    assert "This share link is not valid" in page.locator("[data-testid=page-message]").inner_text()
