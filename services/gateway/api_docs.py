"""/api/docs: Swagger UI served from the gateway's own copy of its files.

FastAPI's default page loads Swagger UI from a CDN, so it stays blank on a
machine without internet, which is where a broker's console often runs. The
files come from the `swagger-ui-bundle-v2` package (Swagger UI's dist files,
Apache-2.0, its licence in the package's metadata), mounted at
/api/docs/assets; the page is FastAPI's own with those URLs.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse
from swagger_ui_bundle import swagger_ui_path

ASSETS = "/api/docs/assets"


def install(app: FastAPI) -> None:
    app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    @app.get("/api/docs", include_in_schema=False)
    async def api_docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url, title=f"{app.title} - API docs",
                                   swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{ASSETS}/favicon-32x32.png")
