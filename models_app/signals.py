"""What the models app announces to the apps that keep records about models (it imports none of them)."""

from django.dispatch import Signal

# A big version was saved through the gateway. kwargs: model_id, version ("v<n>"), changed (the semantic diff's
# changed list [{guid, changes: [{field, old, new}]}]), author, provenance ("UI" | "AI"), operation.
version_saved = Signal()

# A gateway process is about to serve (migrations applied): apps recover what a previous process left unfinished.
gateway_starting = Signal()

# Something the people working on a project should see (a delivery saved versions of its models): the chat
# publishes it into the project's session. kwargs: project_id, event (a frame name such as "viewer.committed"),
# data (the frame's data, without sessionID). The one way other apps tell the chat anything.
project_event = Signal()

# A project is about to be deleted: apps stop what they run for it (the chat aborts the session's turn).
# kwargs: project_id
project_deleting = Signal()

# A conversion made a model ready (an upload, a new revision, a save or a script run converted): apps that redo work
# per model version hear it (coordination_app queues its automatic clash tests). kwargs: model_id
model_ready = Signal()
