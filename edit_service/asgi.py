import os

from django.core.asgi import get_asgi_application
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "edit_service.settings")

# static files are only the offline Swagger UI assets of /docs
application = ASGIStaticFilesHandler(get_asgi_application())
