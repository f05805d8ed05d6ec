"""Project and ProjectModel moved from chat_app to models_app: a database made at the migrations before the move keeps
every project, its model links, its session and its plan versions."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from chat_app.models import ChatSession
from models_app.models import IfcModel, Project
from models_app.selectors import project_model_ids, project_of_model
from plans_app.models import PlanVersion

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage, pytest.mark.heavy]

BEFORE_THE_MOVE = [("models_app", "0003_model_format"), ("chat_app", "0001_initial"), ("plans_app", "0001_initial")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def test_projects_links_sessions_and_plan_versions_survive_the_move():
    old = migrate(BEFORE_THE_MOVE)
    OldModel, OldProject = old.get_model("models_app", "IfcModel"), old.get_model("chat_app", "Project")
    first, second, lone = (OldModel.objects.create(id=f"m_{n:016x}", name=f"{n}.ifc") for n in (1, 2, 3))
    project = OldProject.objects.create(id="p_00000000000000aa", title="Haus", kind="cad->ifc")
    other = OldProject.objects.create(id="p_00000000000000bb", title="Leer", kind="cad")
    links = old.get_model("chat_app", "ProjectModel")
    links.objects.create(project=project, model=first)
    links.objects.create(project=project, model=second)
    old.get_model("chat_app", "ChatSession").objects.create(id="c_00000000000000aa", project=project, model=first, title="Haus")
    old.get_model("plans_app", "PlanVersion").objects.create(project=project, number=1, changed=["plan"], plan={"schema": "plan/1"})

    migrate(latest())

    moved = Project.objects.get(pk=project.id)
    assert (moved.title, moved.kind) == ("Haus", "cad->ifc")
    assert project_model_ids(moved) == [first.id, second.id]  # order kept
    assert project_of_model(lone.id) is None and project_model_ids(other.id) == []
    assert ChatSession.objects.get(pk="c_00000000000000aa").project_id == project.id
    assert PlanVersion.objects.get(project=moved).plan == {"schema": "plan/1"}
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            assert cursor.execute("PRAGMA foreign_key_check").fetchall() == []
    # the foreign keys point at the moved table: deleting the project cascades over it
    moved.delete()
    assert not ChatSession.objects.exists() and not PlanVersion.objects.exists()
    assert IfcModel.objects.filter(pk=first.id).exists() and project_of_model(first.id) is None


def test_the_move_can_be_undone():
    migrate(latest())
    Project.objects.create(id="p_00000000000000cc", title="Zurück", kind="ifc")
    old = migrate(BEFORE_THE_MOVE)
    assert old.get_model("chat_app", "Project").objects.get().title == "Zurück"
    migrate(latest())
    assert Project.objects.get().title == "Zurück"
