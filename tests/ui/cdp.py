# SPDX-License-Identifier: Apache-2.0
"""A small Chrome DevTools Protocol client on the standard library: starts
Debian's chromium headless, speaks the protocol over a WebSocket (RFC 6455,
client side: masked text frames out, unfragmented or fragmented frames in)
and attaches to pages with flattened sessions. Events are kept per session
so a test can read what a page logged and fetched."""

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time


class CdpError(Exception):
    pass


class WebSocket:
    def __init__(self, host, port, path, timeout=30):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n" % (path, host, port, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise CdpError("the DevTools socket closed during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise CdpError("WebSocket handshake refused: %r" % head[:200])

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise CdpError("the DevTools socket closed")
            data += chunk
        return data

    def send(self, text):
        payload = text.encode()
        header = bytes([0x81])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def recv(self, timeout):
        """One whole text message, or None after `timeout` seconds."""
        self.sock.settimeout(timeout)
        message = b""
        try:
            while True:
                b0, b1 = self._read(2)
                self.sock.settimeout(30)  # the rest of a started frame comes soon
                n = b1 & 0x7F
                if n == 126:
                    n = struct.unpack(">H", self._read(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self._read(8))[0]
                payload = self._read(n)
                opcode = b0 & 0x0F
                if opcode == 0x8:
                    raise CdpError("the browser closed the DevTools connection")
                if opcode == 0x9:  # ping: pong with the same payload
                    self.sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
                    continue
                if opcode in (0x1, 0x0):
                    message += payload
                    if b0 & 0x80:
                        return message.decode()
        except socket.timeout:
            if message:
                raise CdpError("a DevTools message was cut short")
            return None


def find_chromium():
    for name in (os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Browser:
    """Headless chromium with a fresh profile; close() ends it and its
    process group."""

    def __init__(self, binary, log_dir):
        self.profile = tempfile.mkdtemp(prefix="collbench-ui-chromium.")
        self.log = open(os.path.join(log_dir, "chromium.log"), "wb")
        argv = [binary, "--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--disable-extensions",
                "--user-data-dir=" + self.profile, "--remote-debugging-port=0",
                "--window-size=1200,900", "about:blank"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise CdpError("chromium did not open its DevTools port (see chromium.log)")
            time.sleep(0.1)
        time.sleep(0.1)
        port, path = open(port_file).read().split()[:2]
        self.ws = WebSocket("127.0.0.1", int(port), path)
        self.next_id = 0
        self.events = []  # (session id, method, params), in arrival order

    def call(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("%s: no answer within %ss" % (method, timeout))
            text = self.ws.recv(left)
            if text is None:
                continue
            reply = json.loads(text)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CdpError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"],
                                    reply.get("params", {})))

    def pump(self, seconds):
        """Collects events for `seconds`."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            text = self.ws.recv(max(0.01, deadline - time.monotonic()))
            if text is None:
                break
            reply = json.loads(text)
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"],
                                    reply.get("params", {})))

    def new_page(self, width=1200, height=900):
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(domain + ".enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        return Page(self, session, target)

    def close(self):
        try:
            os.killpg(self.proc.pid, 15)
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser, session, target):
        self.browser, self.session, self.target = browser, session, target
        self.mark = len(browser.events)

    def call(self, method, params=None, timeout=60):
        return self.browser.call(method, params, session=self.session, timeout=timeout)

    def navigate(self, url, timeout=30):
        """Loads `url` and waits for its load event; events seen from here on
        belong to this load."""
        self.mark = len(self.browser.events)
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e[0] == self.session and e[1] == "Page.loadEventFired"
                   for e in self.browser.events[self.mark:]):
                return
            self.browser.pump(0.2)
        raise CdpError("%s did not load within %ss" % (url, timeout))

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise CdpError("evaluate %r: %s" % (expression, result["exceptionDetails"]))
        return result["result"].get("value")

    def events(self, method=None):
        return [params for session, name, params in self.browser.events[self.mark:]
                if session == self.session and (method is None or name == method)]

    def errors(self):
        """Console errors, uncaught exceptions and error log entries since
        the last navigate()."""
        found = []
        for p in self.events("Runtime.exceptionThrown"):
            found.append("exception: %s" % p["exceptionDetails"].get("exception", {}).get(
                "description", p["exceptionDetails"].get("text")))
        for p in self.events("Runtime.consoleAPICalled"):
            if p["type"] in ("error", "assert"):
                found.append("console.%s: %s" % (p["type"], [a.get("value", a.get("description"))
                                                            for a in p["args"]]))
        for p in self.events("Log.entryAdded"):
            if p["entry"]["level"] == "error":
                found.append("log: %s (%s)" % (p["entry"]["text"], p["entry"].get("url", "")))
        return found

    def requests(self):
        return [p["request"]["url"] for p in self.events("Network.requestWillBeSent")]

    def screenshot(self, path, full_page=False):
        params = {"format": "png"}
        if full_page:
            height = self.evaluate("document.documentElement.scrollHeight")
            params["clip"] = {"x": 0, "y": 0, "width": 1200, "height": min(int(height), 6000),
                              "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
