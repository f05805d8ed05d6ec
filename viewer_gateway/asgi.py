import asyncio
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "viewer_gateway.settings")

from channels.routing import ProtocolTypeRouter  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()

from chat_app.lifecycle import bind_server_loop  # noqa: E402
from viewer_gateway.edge import trusted_scope  # noqa: E402

router = ProtocolTypeRouter({"http": django_asgi_app})


async def application(scope, receive, send):
    bind_server_loop(asyncio.get_running_loop())  # chat turns run on the server's loop
    return await router(trusted_scope(scope), receive, send)
