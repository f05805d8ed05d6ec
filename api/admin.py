"""Admin pages of records that change only through the API (history, logs, results)."""

from __future__ import annotations


class ReadOnlyAdminMixin:
    """Shown, never added or changed in the admin; deleted only where `deletable` says so (and the user may)."""

    deletable = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return self.deletable and super().has_delete_permission(request, obj)
