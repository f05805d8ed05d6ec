# Project and ProjectModel move to models_app. Step 2 of 2: the session points at models_app's Project, and
# chat_app forgets its own copies (state only: the tables now belong to models_app).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("chat_app", "0002_project_tables_to_models_app"),
        ("models_app", "0004_project"),
        ("plans_app", "0002_project_in_models_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="chatsession",
                    name="project",
                    field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name="session", to="models_app.project"),
                ),
                migrations.RemoveField(model_name="project", name="ifc_models"),
                migrations.DeleteModel(name="ProjectModel"),
                migrations.DeleteModel(name="Project"),
            ],
            database_operations=[],
        ),
    ]
