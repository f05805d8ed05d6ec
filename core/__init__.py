"""The project's bottom layer: plain Python shared by the gateway and the edit service (no Django, no app imports)."""
