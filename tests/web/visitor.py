"""A browser without a browser, for the entrant pages' tests: one cookie jar, requests
over real HTTP, the sign-in form's CSRF token read from the page."""

from __future__ import annotations

import http.client
import re
from dataclasses import dataclass, field
from urllib.parse import urlencode


@dataclass
class Visitor:
    """A browser without a browser: one cookie jar, requests over real HTTP."""

    port: int
    cookies: dict[str, str] = field(default_factory=dict)

    def send(self, method: str, path: str, form: dict[str, str] | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            sent = dict(headers or {})
            if self.cookies:
                sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
            body = None
            if form is not None:
                body = urlencode(form).encode()
                sent["Content-Type"] = "application/x-www-form-urlencoded"
            conn.request(method, path, body=body, headers=sent)
            resp = conn.getresponse()
            text = resp.read().decode("utf-8")
            for header in resp.headers.get_all("set-cookie") or []:
                name, _, rest = header.partition("=")
                value = rest.split(";")[0]
                if "max-age=0" in header.lower() or not value.strip('"'):
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = value
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, text
        finally:
            conn.close()

    def get(self, path: str) -> tuple[int, str]:
        status, _headers, text = self.send("GET", path)
        return status, text

    def csrf(self) -> str:
        status, text = self.get("/me/sign-in")
        assert status == 200
        found = re.search(r'name="csrf" value="([^"]+)"', text)
        assert found is not None
        return found[1]

    def sign_in(self, token: str) -> int:
        status, _headers, _text = self.send("POST", "/me/sign-in",
                                            {"csrf": self.csrf(), "token": token})
        return status
