"""Screenshots of live web pages with headless Chromium, for the dashboard tests and docs/.

``chromium --screenshot`` shoots as soon as the page has loaded, before a Bokeh server page
has pulled its document over the websocket, so the picture is blank.  Here Chromium is driven
through the DevTools protocol instead (tornado's websocket client): open the page, wait real
seconds, then capture.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tornado.httpclient import AsyncHTTPClient
from tornado.websocket import websocket_connect


def chromium() -> str | None:
    """The Chromium executable, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(url: str, path: Path, *, wait_s: float = 6.0, width: int = 1400, height: int = 900) -> Path:
    """Load ``url`` in headless Chromium, wait ``wait_s`` seconds, write a PNG of the viewport."""
    executable = chromium()
    if executable is None:
        raise RuntimeError("chromium not found")
    # Chromium's helper processes may still write to the profile after the browser is gone
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        process = subprocess.Popen(
            [
                executable,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            port = _devtools_port(process)
            png = asyncio.run(_capture(port, url, wait_s))
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # the browser and its helper processes
            process.wait()
    path.write_bytes(png)
    return path


def _devtools_port(process: subprocess.Popen, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
        if found:
            return int(found.group(1))
        if not line and process.poll() is not None:
            break
    raise RuntimeError("headless Chromium did not open its DevTools port")


async def _capture(port: int, url: str, wait_s: float) -> bytes:
    http = AsyncHTTPClient()
    targets = json.loads((await http.fetch(f"http://127.0.0.1:{port}/json/list")).body)
    page = next(t for t in targets if t["type"] == "page")
    connection = await websocket_connect(page["webSocketDebuggerUrl"], max_message_size=256 * 2**20)
    try:
        await _call(connection, 1, "Page.navigate", {"url": url})
        await asyncio.sleep(wait_s)
        result = await _call(connection, 2, "Page.captureScreenshot", {"format": "png"})
        return base64.b64decode(result["data"])
    finally:
        connection.close()


async def _call(connection, ident: int, method: str, params: dict) -> dict:
    """Send one DevTools command and return its result (events in between are skipped)."""
    await connection.write_message(json.dumps({"id": ident, "method": method, "params": params}))
    while True:
        message = await connection.read_message()
        if message is None:
            raise RuntimeError("Chromium closed the DevTools connection")
        reply = json.loads(message)
        if reply.get("id") == ident:
            if "error" in reply:
                raise RuntimeError(f"{method}: {reply['error']}")
            return reply["result"]
