"""What the coordination app announces to the apps that act on clash results (it imports none of them)."""

from django.dispatch import Signal

# A clash run is done (its clashes and their statuses are recorded; sent after the commit). kwargs: run_id, staged
# (True: a run on the agent's staged product, which changed no clash's status; receivers that resolve or reopen
# records should skip it).
run_finished = Signal()
