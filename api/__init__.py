"""The API glue shared by the apps' views and admins (DRF and Django admin helpers), above `core` and below every app.

The response envelope and the mapping of core.errors to it live at the edge (viewer_gateway/envelope.py).
"""
