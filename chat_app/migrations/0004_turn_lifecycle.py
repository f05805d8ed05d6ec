# Turns get a lifecycle of their own (chat_app/lifecycle.py). The turn state the sessions and messages held moves
# into Turn rows: a busy session's turn (waiting when a question is open, else running, which the next gateway start
# ends as cut), and each queued message becomes a queued turn.

import chat_app.models
import django.db.models.deletion
from django.db import migrations, models


def turns_from_session_state(apps, schema_editor):
    ChatSession, Turn = apps.get_model("chat_app", "ChatSession"), apps.get_model("chat_app", "Turn")
    Message, PendingQuestion = apps.get_model("chat_app", "Message"), apps.get_model("chat_app", "PendingQuestion")
    for session in ChatSession.objects.all():
        if session.status == "busy":
            open_questions = PendingQuestion.objects.filter(session=session, state__in=["pending", "answered"])
            last_user = Message.objects.filter(session=session, role="user", subagent_id="").exclude(state="queued").order_by("-id").first()
            turn = Turn.objects.create(
                session=session, state="waiting" if open_questions.exists() else "running", runner="" if open_questions.exists() else session.runner,
                heartbeat_at=session.heartbeat_at, text="", queued_message_id=last_user.id if last_user else "", user_message_id=last_user.id if last_user else "",
            )
            open_questions.update(turn=turn)
            if last_user is not None:
                Message.objects.filter(session=session, id__gte=last_user.id).exclude(state="queued").update(turn=turn)
        for queued in Message.objects.filter(session=session, state="queued").order_by("id"):
            text = "".join(part.data.get("text", "") for part in queued.parts.all())
            Turn.objects.create(session=session, text=text, queued_message_id=queued.id)
            queued.delete()


class Migration(migrations.Migration):

    dependencies = [
        ('chat_app', '0003_project_moved_to_models_app'),
    ]

    operations = [
        migrations.AddField(
            model_name='chatsession',
            name='allowed_tools',
            field=models.JSONField(blank=True, default=list, help_text="irreversible tools the user allowed for the whole session (answer 'always')"),
        ),
        migrations.AddField(
            model_name='pendingquestion',
            name='kind',
            field=models.CharField(choices=[('question', 'Question'), ('permission', 'Permission')], default='question', max_length=10),
        ),
        migrations.AddField(
            model_name='pendingquestion',
            name='subagent_id',
            field=models.CharField(blank=True, default='', max_length=20),
        ),
        migrations.CreateModel(
            name='Turn',
            fields=[
                ('id', models.CharField(default=chat_app.models.new_turn_id, editable=False, max_length=40, primary_key=True, serialize=False)),
                ('state', models.CharField(choices=[('queued', 'Queued'), ('claimed', 'Claimed'), ('running', 'Running'), ('waiting', 'Waiting'), ('finished', 'Finished')], db_index=True, default='queued', max_length=8)),
                ('outcome', models.CharField(blank=True, choices=[('', '-'), ('completed', 'Completed'), ('aborted', 'Aborted'), ('failed', 'Failed'), ('cut', 'Cut'), ('interrupted', 'Interrupted')], default='', max_length=11)),
                ('text', models.TextField(help_text="the user's message")),
                ('queued_message_id', models.CharField(help_text='the id GET messages shows while the turn is queued', max_length=40)),
                ('user_message_id', models.CharField(blank=True, default='', help_text='the user message, once the turn started', max_length=40)),
                ('runner', models.CharField(blank=True, default='', max_length=128)),
                ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                ('abort_requested', models.BooleanField(default=False)),
                ('created_at', models.DateTimeField(auto_now_add=True, help_text='when the message was taken')),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='turns', to='chat_app.chatsession')),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.AddField(
            model_name='message',
            name='turn',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='messages', to='chat_app.turn'),
        ),
        migrations.AddField(
            model_name='pendingquestion',
            name='turn',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='questions', to='chat_app.turn'),
        ),
        migrations.AddConstraint(
            model_name='turn',
            constraint=models.UniqueConstraint(condition=models.Q(('state__in', ['claimed', 'running', 'waiting'])), fields=('session',), name='one_active_turn_per_session'),
        ),
        migrations.RunPython(turns_from_session_state, migrations.RunPython.noop),
        migrations.RemoveField(
            model_name='chatsession',
            name='abort_requested',
        ),
        migrations.RemoveField(
            model_name='chatsession',
            name='heartbeat_at',
        ),
        migrations.RemoveField(
            model_name='chatsession',
            name='runner',
        ),
        migrations.RemoveField(
            model_name='chatsession',
            name='status',
        ),
        migrations.RemoveField(
            model_name='message',
            name='state',
        ),
    ]
