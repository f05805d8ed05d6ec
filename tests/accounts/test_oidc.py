"""Single sign-on end to end: a real OpenID Connect provider (the certified oidc-provider on Node, in oidc_provider/)
and the gateway as a real process, the whole redirect dance over HTTP as a browser does it: the gateway's
/oidc/authenticate/, the provider's sign-in form, the callback, the signed-in session (docs/security/single-sign-on.md).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit, urlunsplit

import jwt
import pytest
import requests

from tests.e2e.stack import ROOT, Stack, free_port
from tests.processes import spawn, stop

pytestmark = pytest.mark.e2e

PROVIDER_DIR = Path(__file__).resolve().parent / "oidc_provider"
CLIENT_ID = "review-gateway"
CLIENT_SECRET = "the client secret of the tests, 32 bytes or more"
ADMIN_GROUP, GUEST_GROUP = "bmr-admins", "partners"
ACCOUNTS = {
    "alice": {"sub": "sub-alice", "claims": {"preferred_username": "alice", "name": "Alice Archer", "email": "alice@example.test", "groups": ["reviewers"]}},
    "dana": {"sub": "sub-dana", "claims": {"preferred_username": "dana", "email": "dana@example.test", "groups": ["staff", ADMIN_GROUP]}},
    "erin": {"sub": "sub-erin", "claims": {"preferred_username": "erin", "groups": [GUEST_GROUP]}},
    "carol": {"sub": "sub-carol", "claims": {"preferred_username": "carol", "groups": []}},
}
FORM_ACTION = re.compile(r'<form method="post" action="([^"]+)"')


def provider_modules() -> None:
    """The provider's node_modules (git-ignored): `make setup` installs them; a bare checkout gets them here."""
    if (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is needed for the OpenID Connect provider of these tests (install Node.js >= 20)")
    subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PROVIDER_DIR, check=True, timeout=300)


class SingleSignOn:
    def __init__(self, stack: Stack, accounts_path: Path, issuer: str):
        self.stack = stack
        self.issuer = issuer
        self.accounts_path = accounts_path

    def set_claims(self, login: str, **claims) -> None:
        accounts = json.loads(self.accounts_path.read_text())
        accounts[login]["claims"].update(claims)
        self.accounts_path.write_text(json.dumps(accounts))

    def sign_in(self, login: str, *, alter_callback=None) -> tuple[requests.Session, list[requests.Response]]:
        """Follows the flow from the gateway's sign-in link to its end as a browser would, submitting the provider's
        form as `login`; `alter_callback(url)` may change the callback URL the provider redirects to. Returns the
        browser (its cookies) and every response on the way."""
        browser = requests.Session()
        response = browser.get(f"{self.stack.url}/oidc/authenticate/", allow_redirects=False, timeout=30)
        seen = [response]
        for _ in range(12):
            if response.is_redirect:
                target = urljoin(response.url, response.headers["Location"])
                if alter_callback and target.startswith(f"{self.stack.url}/oidc/callback/"):
                    target = alter_callback(target)
                response = browser.get(target, allow_redirects=False, timeout=30)
            elif (form := FORM_ACTION.search(response.text)) and "/interaction/" in response.url:
                response = browser.post(urljoin(response.url, form.group(1)), data={"login": login}, allow_redirects=False, timeout=30)
            else:
                return browser, seen
            seen.append(response)
        raise AssertionError(f"no end after {[r.url for r in seen]}")

    def me(self, browser: requests.Session) -> requests.Response:
        return browser.get(f"{self.stack.url}/api/v1/auth/me", timeout=30)

    def rows(self, table: str, where: str) -> int:
        return self.stack.count_rows({table: where})[table]

    def shell(self, code: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=self.stack.env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()


def wait_for_discovery(issuer: str, provider: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if provider.poll() is not None:
            raise RuntimeError(f"the OpenID Connect provider ended: {log.read_text()[-2000:]}")
        try:
            if requests.get(f"{issuer}/.well-known/openid-configuration", timeout=2).status_code == 200:
                return
        except requests.RequestException:  # not listening yet
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the OpenID Connect provider did not come up: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def sso(tmp_path_factory):
    provider_modules()
    data_dir = tmp_path_factory.mktemp("sso")
    issuer = f"http://127.0.0.1:{free_port()}"
    stack = Stack(data_dir, workers=0, config={
        "oidcIssuer": issuer, "oidcClientId": CLIENT_ID, "oidcClientSecret": CLIENT_SECRET, "oidcName": "Test provider",
        "oidcScopes": "openid email profile groups", "oidcGroupsClaim": "groups",
        "oidcAdminGroups": [ADMIN_GROUP], "oidcGuestGroups": [GUEST_GROUP],
    })
    accounts_path = data_dir / "provider-accounts.json"
    accounts_path.write_text(json.dumps(ACCOUNTS))
    log = data_dir / "provider.log"
    env = {**stack.env, "OIDC_PORT": str(urlsplit(issuer).port), "OIDC_CLIENT_ID": CLIENT_ID, "OIDC_CLIENT_SECRET": CLIENT_SECRET,
           "OIDC_REDIRECT_URI": f"{stack.url}/oidc/callback/", "OIDC_ACCOUNTS": str(accounts_path)}
    with open(log, "ab") as output:
        provider = spawn(["node", "provider.mjs"], cwd=PROVIDER_DIR, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_for_discovery(issuer, provider, log)
        stack.migrate()
        stack.start_gateway()
        yield SingleSignOn(stack, accounts_path, issuer)
    finally:
        stack.stop()
        stop(provider)


def test_first_sign_in_creates_the_account_and_the_second_finds_it(sso):
    browser, seen = sso.sign_in("alice")

    authorize = parse_qs(urlsplit(seen[0].headers["Location"]).query)
    assert authorize["code_challenge_method"] == ["S256"] and len(authorize["code_challenge"][0]) == 43
    assert authorize["response_type"] == ["code"] and authorize["client_id"] == [CLIENT_ID]
    assert authorize["state"][0] and authorize["nonce"][0]
    assert authorize["scope"] == ["openid email profile groups"]
    callback = next(r for r in seen if r.url.startswith(f"{sso.stack.url}/oidc/callback/"))
    assert callback.headers["Location"] == "/"
    me = sso.me(browser)
    assert me.status_code == 200, me.text
    assert me.json()["data"] == {**me.json()["data"], "username": "alice", "displayName": "Alice Archer", "role": "user", "via": "session"}
    assert sso.rows("accounts_account", "external_subject = 'sub-alice'") == 1
    assert sso.rows("accounts_auditevent", "username = 'alice' AND action = 'sign-in' AND detail LIKE '%single sign-on%'") == 1

    again, _ = sso.sign_in("alice")

    assert sso.me(again).json()["data"]["username"] == "alice"
    assert sso.rows("auth_user", "username = 'alice'") == 1
    assert sso.rows("accounts_auditevent", "username = 'alice' AND action = 'sign-in'") == 2


def test_groups_claim_maps_to_the_server_role_at_every_sign_in(sso):
    admin, _ = sso.sign_in("dana")
    guest, _ = sso.sign_in("erin")

    assert sso.me(admin).json()["data"]["role"] == "admin"
    assert sso.me(guest).json()["data"]["role"] == "guest"
    assert sso.rows("auth_user", "username = 'dana' AND is_superuser AND is_staff") == 1

    sso.set_claims("erin", groups=["reviewers"])
    erin, _ = sso.sign_in("erin")

    assert sso.me(erin).json()["data"]["role"] == "user"


def test_an_existing_account_is_linked_by_the_username_claim_then_found_by_its_subject(sso):
    sso.shell("from accounts_app.services.users import user_create; from api.principal import Principal;"
              "user_create(Principal(name='operator'), username='carol', password='a long pass phrase of carol')")

    browser, _ = sso.sign_in("carol")

    assert sso.me(browser).json()["data"]["username"] == "carol"
    assert sso.rows("auth_user", "username LIKE 'carol%'") == 1
    assert sso.rows("accounts_account", "external_subject = 'sub-carol'") == 1

    sso.set_claims("carol", preferred_username="carol.renamed")
    renamed, _ = sso.sign_in("carol")

    assert sso.me(renamed).json()["data"]["username"] == "carol"
    assert sso.rows("auth_user", "username LIKE 'carol%'") == 1


def test_a_tampered_state_is_refused(sso):
    def tamper(url: str) -> str:
        parts = urlsplit(url)
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        query["state"] = query["state"][::-1]
        return urlunsplit(parts._replace(query=urlencode(query)))

    browser, seen = sso.sign_in("alice", alter_callback=tamper)

    callback = next(r for r in seen if r.url.startswith(f"{sso.stack.url}/oidc/callback/"))
    assert callback.status_code == 302 and callback.headers["Location"] == "/sign-in?sso=failed"
    me = sso.me(browser)
    assert me.status_code == 401 or me.json()["data"]["via"] != "session", me.text
    assert sso.rows("accounts_auditevent", "action = 'sign-in.failed' AND detail LIKE '%oidc%state not found%'") == 1


@pytest.mark.django_db
def test_an_unreachable_provider_is_named_when_signing_in(client, viewer_config):
    closed = f"http://127.0.0.1:{free_port()}"
    viewer_config(oidcIssuer=closed, oidcClientId=CLIENT_ID, oidcClientSecret=CLIENT_SECRET)

    response = client.get("/oidc/authenticate/")

    assert response.status_code == 502
    assert f"{closed}/.well-known/openid-configuration cannot be read" in response.json()["message"]


@pytest.mark.parametrize("config, problem", [
    ({"oidcIssuer": "http://sso.example.com"}, "oidcIssuer: expected the provider's https:// issuer URL"),
    ({"oidcIssuer": "https://sso.example.com/realms/a?x=1"}, "oidcIssuer: expected"),
    ({"oidcIssuer": "https://sso.example.com"}, "oidcClientId: required with oidcIssuer"),
    ({"oidcIssuer": "https://sso.example.com", "oidcClientId": "c"}, "oidcClientSecret: required with oidcIssuer"),
    ({"oidcScopes": "email profile"}, 'oidcScopes: must include "openid"'),
    ({"oidcAdminGroups": ["admins", 7]}, "oidcAdminGroups: every item must be a string"),
])
def test_the_single_sign_on_configuration_is_checked(tmp_path, config, problem):
    from viewer_gateway.config import ConfigError, load_config

    path = tmp_path / "server_config.json"
    path.write_text(json.dumps(config))

    with pytest.raises(ConfigError, match=re.escape(problem)):
        load_config({"VIEWER_CONFIG": str(path)})


def test_the_client_secret_may_come_from_the_environment(tmp_path):
    from viewer_gateway.config import load_config

    path = tmp_path / "server_config.json"
    path.write_text(json.dumps({"oidcIssuer": "https://sso.example.com/realms/acme", "oidcClientId": "c", "oidcGuestGroups": "partners, guests"}))

    config = load_config({"VIEWER_CONFIG": str(path), "VIEWER_OIDC_CLIENT_SECRET": "s3cret"})

    assert (config.oidc_enabled, config.oidcClientSecret, config.oidcGuestGroups) == (True, "s3cret", ("partners", "guests"))
    assert config.oidcScopes == "openid email profile" and config.oidcUsernameClaim == "preferred_username"


# --- the ID token checks mozilla-django-oidc leaves out, on tokens this test signs (the provider signs only good ones)

@pytest.fixture
def signing_key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def id_token(signing_key, issuer: str, **changes) -> str:
    now = int(time.time())
    claims = {"iss": issuer, "aud": CLIENT_ID, "sub": "sub-alice", "iat": now, "exp": now + 300, "nonce": "n", **changes}
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, signing_key, algorithm="RS256", headers={"kid": "k"})


@pytest.mark.django_db
@pytest.mark.parametrize("changes, refusal", [
    ({"aud": "another-client"}, "Audience doesn't match"),
    ({"iss": "https://another-issuer.example"}, "Invalid issuer"),
    ({"exp": int(time.time()) - 3600}, "Signature has expired"),
    ({"exp": None}, 'Token is missing the "exp" claim'),
    ({"aud": [CLIENT_ID, "another-client"]}, "authorized party is not this client"),
])
def test_an_id_token_for_another_client_issuer_or_time_is_refused(sso, viewer_config, signing_key, changes, refusal):
    from django.core.exceptions import SuspiciousOperation

    from accounts_app.oidc import OidcBackend

    viewer_config(oidcIssuer=sso.issuer, oidcClientId=CLIENT_ID, oidcClientSecret=CLIENT_SECRET)
    backend = OidcBackend()
    good = id_token(signing_key, sso.issuer)
    assert backend._verify_jws(good, signing_key.public_key())["sub"] == "sub-alice"

    with pytest.raises(SuspiciousOperation, match=re.escape(refusal)):
        backend._verify_jws(id_token(signing_key, sso.issuer, **changes), signing_key.public_key())


@pytest.mark.django_db
def test_an_id_token_signed_with_the_client_secret_is_refused(sso, viewer_config):
    from django.core.exceptions import SuspiciousOperation

    from accounts_app.oidc import OidcBackend

    viewer_config(oidcIssuer=sso.issuer, oidcClientId=CLIENT_ID, oidcClientSecret=CLIENT_SECRET)
    now = int(time.time())
    forged = jwt.encode({"iss": sso.issuer, "aud": CLIENT_ID, "sub": "sub-dana", "iat": now, "exp": now + 300}, CLIENT_SECRET, algorithm="HS256")

    with pytest.raises(SuspiciousOperation, match="not signed with RS256"):
        OidcBackend()._verify_jws(forged, CLIENT_SECRET)
