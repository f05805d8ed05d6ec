"""The Django settings mozilla-django-oidc reads for single sign-on (docs/security/single-sign-on.md).

Only what does not change with the configuration is here. The client (oidcClientId, oidcClientSecret) and the scopes
(oidcScopes) are read from settings.VIEWER at each request, and the provider's endpoints come from its discovery
document at the first sign-in (accounts_app/oidc.py): neither is known when Django starts, and a provider that is down
must not stop the gateway from starting.
"""

OIDC_AUTHENTICATE_CLASS = "accounts_app.oidc.SignInRedirectView"
OIDC_CALLBACK_CLASS = "accounts_app.oidc.SignInCallbackView"

# authorization code with PKCE (S256) and a nonce in the ID token, whose signature (RS256: accounts_app.oidc.OidcBackend)
# is checked with the key of the provider's JWKS that its kid names
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_USE_NONCE = True
OIDC_VERIFY_KID = True
OIDC_VERIFY_SSL = True
OIDC_TIMEOUT = 15
OIDC_STORE_ACCESS_TOKEN = False
OIDC_STORE_ID_TOKEN = False

# after the provider: the web client, or the sign-in page saying single sign-on failed
LOGIN_REDIRECT_URL = "/"
LOGIN_REDIRECT_URL_FAILURE = "/sign-in?sso=failed"
LOGOUT_REDIRECT_URL = "/"
