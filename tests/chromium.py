"""A headless Chromium driven over the DevTools protocol, for tests that must see what a browser
renders (scripts run, images decoded), with no driver package: Chromium's
`--remote-debugging-pipe` reads JSON commands on file descriptor 3 and answers on 4, each
message ending in a NUL byte."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

EXECUTABLE = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
]


class Chromium:
    """One browser with one page; `evaluate` runs JavaScript in it and returns the value."""

    def __init__(self, profile: Path, timeout: float = 60.0):
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        # the child sees our pipe ends as its descriptors 3 (commands) and 4 (answers)
        self._process = subprocess.Popen(
            [EXECUTABLE, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe"],
            pass_fds=(3, 4),
            preexec_fn=lambda: _as_fds_3_and_4(to_browser, from_browser),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._timeout = timeout
        self._next_id = 0
        self._buffer = b""
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        attach = {"targetId": target, "flatten": True}
        self._session = self._send("Target.attachToTarget", attach)["sessionId"]

    def _send(self, method: str, params: dict[str, Any], session: str | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._receive()
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def _receive(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (awaited when it is a promise)."""
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        result = self._send("Runtime.evaluate", params, self._session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"javascript failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str) -> None:
        """Load url and wait until its scripts have run (document complete)."""
        self._send("Page.navigate", {"url": url}, self._session)
        self.evaluate(WAIT_COMPLETE)

    def screenshot(self, path: Path) -> None:
        """The page as the window shows it, as PNG."""
        shot = self._send("Page.captureScreenshot", {"format": "png"}, self._session)
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        self._process.kill()
        self._process.wait(timeout=self._timeout)
        os.close(self._write)
        os.close(self._read)


def _as_fds_3_and_4(commands: int, answers: int) -> None:
    """In the child: its descriptor 3 reads our commands and 4 writes its answers."""
    commands, answers = os.dup(commands), os.dup(answers)  # off 3 and 4 before overwriting
    os.dup2(commands, 3)
    os.dup2(answers, 4)


WAIT_COMPLETE = """new Promise(resolve => {
  const done = () => document.readyState === 'complete' ? resolve(true) : setTimeout(done, 50);
  done();
})"""
