from django.db import migrations, models


def requester_is_the_model(apps, schema_editor):
    apps.get_model("checks_app", "Check").objects.update(requester=models.F("model_id"))


class Migration(migrations.Migration):

    dependencies = [
        ("checks_app", "0002_project_in_models_app"),
    ]

    operations = [
        migrations.AddField(
            model_name="check",
            name="requester",
            field=models.CharField(db_index=True, default="", help_text="whose turn the check takes in the fair queue: the model id (the user, once there are accounts)", max_length=128),
            preserve_default=False,
        ),
        migrations.RunPython(requester_is_the_model, migrations.RunPython.noop),
        migrations.AddField(
            model_name="check",
            name="failed_under_limits",
            field=models.CharField(blank=True, default="", help_text="a failure the same request would meet again (time limit, memory cap, an IDS pattern the engine cannot run): the limits it failed under; the same request under the same limits is answered by this check", max_length=64),
        ),
    ]
