# IDS files belong to models_app's Project now (the same table, renamed by chat_app 0002): state only. It runs before
# chat_app forgets its own Project (chat_app 0003).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("checks_app", "0001_initial"),
        ("models_app", "0004_project"),
    ]
    run_before = [
        ("chat_app", "0003_project_moved_to_models_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="idsfile",
                    name="project",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="ids_files", to="models_app.project"),
                ),
            ],
            database_operations=[],
        ),
    ]
