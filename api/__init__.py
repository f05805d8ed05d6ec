"""The API glue shared by the apps' views and admins, above `core` and below every app: the response envelope and the
mapping of core.errors to it (envelope.py), serializer fields, upload limits, static file responses, the request's
principal, neutral host paths, and Django admin helpers. It imports no app and not the shell (viewer_gateway).
"""
