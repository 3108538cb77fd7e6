"""The arena's web page and JSON API (docs/WEB.md): `web.app.make_web_app(site)` builds
the FastAPI app that `cfarena serve --http-port` serves next to /metrics (imported
from its module: the CLI imports this package, and the app imports the CLI's reports).

| module | what |
|---|---|
| `app.py` | the app: routers, static files, error pages |
| `pages.py`, `templates/`, `static/` | the HTML pages (Jinja2) and their little JavaScript |
| `api.py`, `schemas.py` | the JSON API and its OpenAPI models; admin actions |
| `data.py` | database reads behind both (run in a worker thread) |
| `disclosure.py` | what of a match may be shown (seed, log, hands): pure rules |
| `live.py`, `hub.py` | the live view: public messages, and the hub that fans them out |
| `chart.py` | the rating chart as inline SVG |
| `entrant.py`, `entrant_session.py` | the entrant's pages (`/me`) and their signed session |
| `entrant_data.py`, `seat_view.py` | what an entrant sees of their bot; a match as a seat saw it |
| `site.py` | what the app serves from (database, hub, pool, admin token, arena) |
"""

from __future__ import annotations

from cfarena.server.web.hub import LiveHub
from cfarena.server.web.site import WebSite

__all__ = ["LiveHub", "WebSite"]
