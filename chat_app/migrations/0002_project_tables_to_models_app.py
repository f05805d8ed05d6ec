# Project and ProjectModel move to models_app (a project is a group of models). Step 1 of 2: their tables get the
# names models_app uses; the rows stay where they are (foreign keys pointing at them follow the rename).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("chat_app", "0001_initial"),
    ]

    operations = [
        migrations.AlterModelTable(name="project", table="models_app_project"),
        migrations.AlterModelTable(name="projectmodel", table="models_app_projectmodel"),
    ]
