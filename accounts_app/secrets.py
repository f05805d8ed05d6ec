"""The secrets people hold (personal API tokens, share links): made once, shown once, kept only as a SHA-256."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "bmr_"  # a personal API token ("building-model review"); tells it from the operator's apiToken
SHARE_PREFIX = "bms_"
OAUTH_PREFIX = "bmo_"  # an OAuth2 access or refresh token of a BCF API client (accounts_app/oauth.py)
SHARE_COOKIE = "viewer_share"  # holds an opened share link's secret


def new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
