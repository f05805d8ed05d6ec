"""Use cases of project membership: who works on a project, in which role (owner, editor, reviewer, viewer). A
project always keeps an owner: the last one is neither removed nor demoted.

    >>> project_owner_add("p_0123456789abcdef", request.user.pk)      # whoever creates a project owns it
    >>> member_set("p_0123456789abcdef", "ben", "reviewer", by=Principal.of(request))
    (<ProjectMember: ben in p_0123456789abcdef as reviewer>, True)
    >>> member_remove("p_0123456789abcdef", "ben", by=Principal.of(request))
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from accounts_app.audit import audit_record
from accounts_app.models import ProjectMember
from accounts_app.roles import ProjectRole
from accounts_app.services.users import invalid_field
from api.principal import Principal
from core.errors import Conflict, NotFound

User = get_user_model()


def member_list(project_id: str):
    return ProjectMember.objects.filter(project_id=project_id).select_related("user", "user__account").order_by("user__username")


def project_owner_add(project_id: str, user_id: int) -> ProjectMember:
    """Makes the account an owner of the project (called when it creates the project); not audited apart from that."""
    member, _created = ProjectMember.objects.update_or_create(project_id=project_id, user_id=user_id, defaults={"role": ProjectRole.OWNER})
    return member


def _refuse_losing_last_owner(member: ProjectMember) -> None:
    if member.role != ProjectRole.OWNER:
        return
    others = ProjectMember.objects.filter(project_id=member.project_id, role=ProjectRole.OWNER).exclude(pk=member.pk)
    if not others.exists():
        raise Conflict(f"{member.user.get_username()} is the project's last owner: make another member owner first")


@transaction.atomic
def member_set(project_id: str, username: str, role: str, by: Principal) -> tuple[ProjectMember, bool]:
    """Adds the user to the project in the role, or changes its role there; True when the user was added."""
    user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
    if user is None:
        raise invalid_field("username", [f"no user {username!r}"])
    role = ProjectRole(role)
    member = ProjectMember.objects.select_for_update().filter(project_id=project_id, user=user).first()
    created = member is None
    previous = None if created else member.role
    if created:
        member = ProjectMember.objects.create(project_id=project_id, user=user, role=role)
    elif member.role != role:
        if role != ProjectRole.OWNER:
            _refuse_losing_last_owner(member)
        member.role = role
        member.save(update_fields=["role"])
    if previous != role:
        audit_record(by, "member.set", object=f"user:{username}", project_id=project_id, detail={"role": str(role), "from": previous})
    return member, created


@transaction.atomic
def member_remove(project_id: str, username: str, by: Principal) -> None:
    member = ProjectMember.objects.select_for_update().select_related("user").filter(
        project_id=project_id, **{f"user__{User.USERNAME_FIELD}": username}).first()
    if member is None:
        raise NotFound(f"{username!r} is not a member of project {project_id}")
    _refuse_losing_last_owner(member)
    member.delete()
    audit_record(by, "member.remove", object=f"user:{username}", project_id=project_id, detail={"role": member.role})
