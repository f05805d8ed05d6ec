"""python -m edit_service: serves the edit service with Daphne on EDIT_SERVICE_HOST:EDIT_SERVICE_PORT."""

import os
import shutil
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "edit_service.settings")


def main() -> None:
    from edit_service import settings

    settings.DATA_DIR.joinpath("models").mkdir(parents=True, exist_ok=True)
    daphne = shutil.which("daphne", path=os.path.dirname(sys.executable)) or "daphne"
    print(f"edit service on http://{settings.HOST}:{settings.PORT} (data: {settings.DATA_DIR})", flush=True)
    os.execv(daphne, [daphne, "-b", settings.HOST, "-p", str(settings.PORT), "edit_service.asgi:application"])


if __name__ == "__main__":
    main()
