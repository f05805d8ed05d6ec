"""Accounts in the web client, in a real Chromium against the real stack: the page sends a person without a session
to the sign-in page and back, the header menu's API tokens dialog makes a token that works over HTTP (and stops
working once revoked), a reviewer of a project sees the build script but none of the controls that change it, a viewer
member reads the properties, checks, chat and issues without the controls that change them (a hint says why) while an
editor has them, and the account menu and the hints speak Chinese when the page does."""

import json
import re
import urllib.error
import urllib.request

import pytest

from tests.browser.conftest import manage_shell, wait_model_open
from tests.e2e.stack import ROOT

pytestmark = pytest.mark.e2e

PASSWORDS = {
    "ada": "ada's long password 1", "rita": "rita's long password 2", "paul": "paul's long password 3",
    "vera": "vera's long password 5", "eddie": "eddie's long password 6",
}
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
for name, role, password in (("vera", "viewer", {vera!r}), ("eddie", "editor", {eddie!r})):
    member = User.objects.create_user(name, password=password)
    Account.objects.update_or_create(user=member, defaults={{"role": "user"}})
    ProjectMember.objects.create(project_id={project_id!r}, user=member, role=role)
ShareLink.objects.create(project_id={project_id!r}, secret_sha256=sha256({share!r}), expires_at=timezone.now() + timedelta(days=1))
"""


@pytest.fixture(scope="module")
def web_stack(own_web_stack):
    """A stack of its own: the people made here turn accounts on, which would refuse the other modules' anonymous
    calls on the shared stack."""
    return own_web_stack


@pytest.fixture(scope="module")
def people(web_stack):
    """A project with a script-built model made in the open mode, then the first accounts (which switch accounts on):
    an admin, a reviewer, a viewer and an editor member of the project, a user of no project; a share link of the
    project; an issue on the model. -> the model's id."""
    project = web_stack.api("POST", "/api/v1/chat/projects", json={"title": "Signed", "kind": "ifc"}).json()["data"]
    model_id = project["models"][0]
    assert web_stack.wait_model(model_id)["status"] == "ready"
    issue = {"title": "Door too narrow", "comment": "Widen it", "topicType": "Issue", "priority": "High", "stage": "Design"}
    answer = web_stack.api("POST", f"/api/v1/models/{model_id}/issues", files={"issue": (None, json.dumps(issue))}).json()
    assert answer["code"] == 0, answer
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


def pick_an_element(page):
    """Picks an element with geometry the way the navigator's search does (a click on its result)."""
    guid = page.evaluate("viewerApp.view3d.viewer.scene.objectIds[0]")
    page.fill("[data-testid=tree-search]", guid[:12])
    page.locator("[data-testid=tree-result]").first.click()
    page.locator("[data-testid=picked-name]").wait_for()


def open_as(page, stack, username, model_id):
    sign_in_through_the_page(page, stack, username, place=f"/#model={model_id}")
    wait_model_open(page)
    page.wait_for_function(f"document.body.dataset.capabilitiesOf === '{model_id}'")


# what each member role finds in the panels: [test id, shown to a viewer, shown to an editor]
PROPERTY_CONTROLS = [("overrides-form", False, True), ("save-overrides", False, True), ("overrides-read-only", True, False)]
CHECK_CONTROLS = [("check-run", False, True), ("check-run-files", False, True), ("checks-read-only", True, False)]
CHAT_CONTROLS = [("chat-input", False, True), ("send", False, True), ("chat-read-only", True, False)]
ISSUE_CONTROLS = [("create-issue", False, True), ("issue-title", False, True), ("issue-delete", False, True), ("issue-status", False, True),
                  ("issue-status-text", True, False), ("issues-read-only", True, False), ("issue-search", True, True)]
DETAIL_CONTROLS = [("field-save", False, True), ("comment-add", False, True), ("comment-text", False, True), ("detail-status", False, True),
                   ("viewpoint-add", False, True), ("detail-status-text", True, False), ("fact-priority", True, False), ("issue-read-only", True, False)]


def shown(page, testid) -> bool:
    # a file input is hidden by design: its label (the button a person clicks) is what shows or not
    locator = page.locator(f"[data-testid={testid}]").first
    if not locator.count():
        return False
    if locator.get_attribute("type") == "file":
        locator = page.locator(f"label:has([data-testid={testid}])").first
    return locator.is_visible()


def assert_controls(page, controls, role):
    column = 1 if role == "viewer" else 2
    wrong = [(control[0], shown(page, control[0])) for control in controls if shown(page, control[0]) != control[column]]
    assert wrong == [], f"{role}: these controls show (True) or hide (False) against the role"


@pytest.mark.parametrize(("username", "role"), [("vera", "viewer"), ("eddie", "editor")])
def test_a_viewer_reads_what_an_editor_changes(page, web_stack, people, username, role):
    open_as(page, web_stack, username, people)
    assert page.evaluate("document.body.dataset.lacks.split(' ').filter(Boolean)") == (["review", "edit", "own"] if role == "viewer" else ["own"])

    pick_an_element(page)
    assert_controls(page, PROPERTY_CONTROLS, role)
    page.shot(f"{role}-properties")

    page.click("[data-tab=checks]")
    page.locator("[data-testid=ids-file-list]").wait_for(state="attached")
    page.locator("[data-testid=ids-hint]", has_text="IDS").wait_for()  # the project's IDS files were read
    assert_controls(page, CHECK_CONTROLS, role)
    page.shot(f"{role}-checks")

    page.click("[data-tab=chat]")
    page.locator("[data-testid=turn-state]", has_text="idle").wait_for()  # the session is attached
    assert_controls(page, CHAT_CONTROLS, role)
    page.shot(f"{role}-chat")

    page.click("[data-tab=issues]")
    page.locator("[data-testid=issue-item]", has_text="Door too narrow").wait_for()
    assert_controls(page, ISSUE_CONTROLS, role)
    if role == "viewer":
        assert page.locator("[data-testid=issue-status-text]").inner_text() == "open"
    page.click("[data-testid=issue-open]")
    page.locator("[data-testid=issue-detail]").wait_for()
    page.locator("[data-testid=comment-list]").wait_for(state="attached")
    assert_controls(page, DETAIL_CONTROLS, role)
    if role == "viewer":
        assert page.locator("[data-testid=fact-priority]").inner_text().split() == ["Priority", "High"]
    page.shot(f"{role}-issue")
    assert page.locator("[data-testid=delete-model]").first.is_hidden()  # deleting the model is its owner's


def test_the_account_menu_and_the_hints_in_chinese(page, web_stack, people):
    open_as(page, web_stack, "vera", people)
    page.select_option("[data-testid=language]", "zh")
    assert page.locator("[data-testid=account-role]").inner_text() == "用户"
    page.click("[data-testid=account-summary]")
    menu = [page.locator(f"[data-testid={item}]").inner_text() for item in ("account-tokens", "account-password", "sign-out")]
    assert menu == ["API 令牌…", "修改密码…", "退出登录"]
    page.shot("chinese-menu")
    page.click("[data-testid=account-tokens]")
    dialog = page.locator("[data-testid=tokens-dialog]")
    dialog.wait_for()
    assert dialog.locator("h3").inner_text() == "API 令牌"
    assert dialog.locator("th").all_inner_texts()[:5] == ["名称", "权限范围", "创建于", "到期", "最近使用"]
    assert page.locator("[data-testid=token-create]").inner_text() == "创建令牌"
    page.shot("chinese-tokens")
    page.click("[data-testid=tokens-close]")
    page.click("[data-tab=issues]")
    hint = page.locator("[data-testid=issues-read-only]")
    assert hint.inner_text() == "您在此处的角色只能查看：编写问题和评论需要本项目的审阅者角色。"
    page.select_option("[data-testid=language]", "en")
    assert hint.inner_text().startswith("Your role here may only read")
    assert page.locator("[data-testid=account-role]").inner_text() == "user"


def chinese_keys() -> set[str]:
    source = (ROOT / "frontend/src/i18n.js").read_text()
    table = source[source.index("const ZH = {"):source.index("\n};")]
    return {json.loads(key) for key in re.findall(r'^\s*("(?:[^"\\]|\\.)*"):', table, re.MULTILINE)}


UI_TEXT = [r'\bt\(\s*("(?:[^"\\]|\\.)*")', r'\bi18n(?:Title|Placeholder)?:\s*("(?:[^"\\]|\\.)*")', r'\bfield\(\s*("(?:[^"\\]|\\.)*")\s*,\s*(?![\s"])',
           r'\brightsHint\(\s*"\w+",\s*("(?:[^"\\]|\\.)*")', r'\b[A-Z_]*HINT = ("(?:[^"\\]|\\.)*")']


def test_every_text_of_the_accounts_side_has_its_chinese():
    """The literals of account.js, the account menu of the page, and the hints beside controls hidden for a role."""
    texts = {"admin", "user", "guest", "read", "write", "Name", "Scope", "Created", "Expires", "Last used"}  # given as values
    for path in ("account.js", "properties.js", "checks.js", "chat.js", "issues.js", "issue_detail.js", "issue_fields.js", "script.js"):
        source = (ROOT / "frontend/src" / path).read_text()
        patterns = UI_TEXT if path == "account.js" else UI_TEXT[3:]
        texts |= {json.loads(text) for pattern in patterns for text in re.findall(pattern, source)}
    page = (ROOT / "templates/viewer/index.html").read_text()
    menu = page[page.index('id="account-menu"'):page.index("</details>", page.index('id="account-menu"'))]
    texts |= set(re.findall(r'data-i18n="([^"]+)"', menu))
    texts.add("You may read this script and its versions; changing them needs the editor role in this project.")
    assert len(texts) > 40
    assert sorted(texts - chinese_keys()) == []
