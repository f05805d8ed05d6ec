# Plan versions belong to models_app's Project now (same table, renamed by chat_app 0002): state only.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("plans_app", "0001_initial"),
        ("models_app", "0004_project"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="planversion",
                    name="project",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="plan_versions", to="models_app.project"),
                ),
            ],
            database_operations=[],
        ),
    ]
