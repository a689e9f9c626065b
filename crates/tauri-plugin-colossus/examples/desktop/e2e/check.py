"""Drives the example app through the W3C WebDriver protocol (plain HTTP, no client library):
the page lists targets, creates a run and watches it over the plugin's Channel; the test
waits for the watch's end frame and checks what the WebView shows."""

from __future__ import annotations

import json
import sys
import time
import urllib.request


def call(base: str, method: str, path: str, body: object | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"{}")


def main(base: str, application: str) -> int:
    session = call(base, "POST", "/session", {"capabilities": {"alwaysMatch": {
        "tauri:options": {"application": application}}}})["value"]["sessionId"]
    try:
        def text(element_id: str) -> str:
            found = call(base, "POST", f"/session/{session}/element",
                         {"using": "css selector", "value": f"#{element_id}"})["value"]
            key = next(iter(found))
            return call(base, "GET", f"/session/{session}/element/{found[key]}/text")["value"]

        deadline = time.monotonic() + 60
        while text("status") in ("starting", "") and time.monotonic() < deadline:
            time.sleep(0.5)
        status, output = text("status"), text("output")
        channel, target = text("channel"), text("target")
        print(json.dumps({"status": status, "output": output, "channel": channel, "target": target}))
        assert status == "done", status
        assert output == "Say hello", output
        assert channel == "development", channel
        assert target == "embedded", target
    finally:
        call(base, "DELETE", f"/session/{session}")
    print("e2e: the WebView created, watched and rendered a run through the plugin")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
