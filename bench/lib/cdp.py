"""Headless Chromium over the Chrome DevTools Protocol, with a minimal WebSocket client
(standard library only): open a page, evaluate JavaScript in it."""
import base64
import json
import os
import socket
import struct
import subprocess
import time
import urllib.request
from urllib.parse import urlparse


class Page:
    def __init__(self, ws_url, timeout=10):
        u = urlparse(ws_url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(f"DevTools refused the WebSocket: {head[:80]!r}")
        self.next_id = 1

    def _send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        n = len(data)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            out += chunk
        return out

    def _receive(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            message += payload
            if b0 & 0x80:
                return message.decode()

    def command(self, method, **params):
        i = self.next_id
        self.next_id += 1
        self._send(json.dumps({"id": i, "method": method, "params": params}))
        while True:
            reply = json.loads(self._receive())
            if reply.get("id") == i:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression):
        result = self.command("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")


def open_page(url, port, profile, env=None, size="1280,720", extra=()):
    """Starts headless Chromium with the page (`extra`: Chromium's own arguments, added);
    returns (process, Page). `port` is ignored: Chromium takes a free one and names it in
    the profile's DevToolsActivePort, so that a Chromium left over from another run on a
    fixed port is never the one spoken to."""
    os.makedirs(profile, exist_ok=True)
    active = os.path.join(profile, "DevToolsActivePort")
    if os.path.exists(active):
        os.remove(active)
    proc = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--mute-audio",
                             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                             f"--user-data-dir={profile}", f"--window-size={size}", *extra, "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 20
    while True:
        try:
            with open(active) as f:
                port = int(f.read().split()[0])
            request = urllib.request.Request(f"http://127.0.0.1:{port}/json/new?{url}", method="PUT")
            with urllib.request.urlopen(request, timeout=2) as response:
                target = json.loads(response.read())
            return proc, Page(target["webSocketDebuggerUrl"])
        except Exception:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise
            time.sleep(0.2)
