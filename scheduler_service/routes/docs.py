"""Swagger UI's CSS and JS for ``/docs``, served from the package (no CDN: ``/docs`` works
offline and behind a firewall).

The files come from the pinned ``flask-swagger-ui`` wheel, which ships Swagger UI's ``dist``
folder with its Apache 2.0 license (``/docs/static/LICENSE``).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from flask import Blueprint, Response, send_from_directory

SWAGGER_UI_URL = "/docs/static/"
SWAGGER_UI_DIST = Path(str(files("flask_swagger_ui") / "dist"))

blp = Blueprint("docs_assets", __name__)


@blp.route(f"{SWAGGER_UI_URL}<path:filename>")
def swagger_ui_asset(filename: str) -> Response:
    return send_from_directory(SWAGGER_UI_DIST, filename, max_age=86_400)
