"""``/docs`` works without internet: every asset of the page is served by the API itself."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.api import api_under_test


def test_the_docs_page_loads_only_assets_the_api_serves(tmp_path: Path) -> None:
    with api_under_test(tmp_path, api_auth="keys") as api:
        page = api.client.get("/docs")
        assert page.status_code == 200
        html = page.get_data(as_text=True)
        assets = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert {Path(asset).name for asset in assets} == {
            "swagger-ui.css",
            "swagger-ui-bundle.js",
            "swagger-ui-standalone-preset.js",
        }
        for asset in assets:
            assert asset.startswith("/docs/static/"), asset
            with api.client.get(asset) as answer:
                assert answer.status_code == 200, asset
                assert len(answer.get_data()) > 100_000
                assert answer.mimetype in ("text/css", "text/javascript")
        with api.client.get("/docs/static/LICENSE") as license_file:
            assert b"Apache License" in license_file.get_data()
        assert api.client.get("/docs/static/../../app.py").status_code == 404
