# Project and ProjectModel move here from chat_app (their tables were renamed by chat_app 0002): state only, the
# database already holds them with every row.

import django.db.models.deletion
from django.db import migrations, models

import models_app.models


class Migration(migrations.Migration):

    dependencies = [
        ("models_app", "0003_model_format"),
        ("chat_app", "0002_project_tables_to_models_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Project",
                    fields=[
                        ("id", models.CharField(default=models_app.models.new_project_id, editable=False, max_length=18, primary_key=True, serialize=False)),
                        ("title", models.CharField(max_length=255)),
                        ("kind", models.CharField(choices=[("ifc", "Ifc"), ("cad", "Cad"), ("cad->ifc", "Cad To Ifc")], max_length=8)),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                    ],
                    options={"ordering": ["-created_at"]},
                ),
                migrations.CreateModel(
                    name="ProjectModel",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("model", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="project_link", to="models_app.ifcmodel")),
                        ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="models_app.project")),
                    ],
                    options={"ordering": ["id"]},
                ),
                migrations.AddField(
                    model_name="project",
                    name="ifc_models",
                    field=models.ManyToManyField(blank=True, related_name="projects", through="models_app.ProjectModel", to="models_app.ifcmodel"),
                ),
            ],
            database_operations=[],
        ),
    ]
