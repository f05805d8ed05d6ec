"""Use cases of people and access, one module per sub-domain: accounts (users), personal API tokens (tokens),
project membership (members) and share links (share_links). Who may call them is decided before any view runs
(viewer_gateway/access.py); these check only what the route's rule cannot know (whose token, which user a body names)."""

from accounts_app.services.members import member_list, member_remove, member_set, project_owner_add
from accounts_app.services.share_links import share_link_create, share_link_get, share_link_list, share_link_revoke
from accounts_app.services.tokens import token_create, token_list, token_owner, token_revoke
from accounts_app.services.users import NO_CHANGE, display_name_of, server_role_sync, user_create, user_delete, user_get, user_list, user_update

__all__ = [
    "NO_CHANGE", "display_name_of", "member_list", "member_remove", "member_set", "project_owner_add", "server_role_sync",
    "share_link_create", "share_link_get", "share_link_list", "share_link_revoke", "token_create", "token_list", "token_owner",
    "token_revoke", "user_create", "user_delete", "user_get", "user_list", "user_update",
]
