"""What the models app announces to the apps that keep records about models (it imports none of them)."""

from django.dispatch import Signal

# A big version was saved through the gateway. kwargs: model_id, version ("v<n>"), changed (the semantic diff's
# changed list [{guid, changes: [{field, old, new}]}]), author, provenance ("UI" | "AI"), operation.
version_saved = Signal()

# A gateway process is about to serve (migrations applied): apps recover what a previous process left unfinished.
gateway_starting = Signal()
