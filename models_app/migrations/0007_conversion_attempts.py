from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('models_app', '0006_trash'),
    ]

    operations = [
        migrations.AddField(
            model_name='ifcmodel',
            name='attempts',
            field=models.PositiveSmallIntegerField(default=0),
        ),
    ]
