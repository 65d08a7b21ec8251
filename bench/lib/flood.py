#!/usr/bin/env python3
"""Wears at a control API the way a stranger without the token can, and prints one JSON line
of what came of it.

    flood.py --port 8485 --guess 12 [--source 127.0.0.2]
        POSTs a pause with a wrong token, 12 times from SOURCE: the statuses, in order.
    flood.py --port 8485 --connections 1100 --hold 15 [--source 127.0.0.2]
        Opens that many TCP connections and holds them for HOLD seconds: half send nothing,
        half the start of a request head and then a header line every 3 s (a slow client).
        How many opened, and how many the server closed before the end.
    flood.py --port 8485 --websockets 128 --hold 10 [--source 127.0.0.3 | --sources 127.0.0.4,127.0.0.5] [--token T]
        Asks for that many event streams (WebSocket upgrades, no Origin, no token) and holds
        those it gets: how many were upgraded, and how many are still open at the end.
    flood.py --port 8485 --heads 16 --head-size 100000 --hold 12 --sources 127.0.0.2,...
        From each source, that many connections, each sending one request head whose target
        is HEAD-SIZE bytes long (then nothing): how many the server answered with 431, how
        many it closed otherwise, and how many are still open at the end.
    flood.py --port 8485 --squat 16 --hold 12 --sources 127.0.0.2,...
        From each source, that many keep-alive connections, each asking for /api/v1/status and
        opening anew whenever the server closes it: how many requests were answered, and
        how many connections the server closed.
    flood.py --port 8485 --pair 10 --sources 127.0.0.2,...
        From each source, that many pairing requests with a wrong proof: the statuses counted.
    flood.py --port 8485 --tokenless 30 [--source 127.0.0.1]
        Cross-site-form-like POSTs (text/plain, no token): the statuses counted.
"""
import base64
import os
import argparse
import errno
import http.client
import json
import resource
import select
import socket
import time


def guess(opts):
    statuses = []
    for i in range(opts.guess):
        conn = http.client.HTTPConnection("127.0.0.1", opts.port, timeout=5, source_address=(opts.source, 0))
        conn.request("POST", "/api/v1/transport/pause", body=b"", headers={"Authorization": f"Bearer wrong-{i:04d}"})
        statuses.append(conn.getresponse().status)
        conn.close()
    return {"statuses": statuses}


def hold(opts):
    ready = connect_all(opts, opts.connections)
    failed = opts.connections * len(sources_of(opts)) - len(ready)
    pending = [(s, i % 2 == 1) for i, s in enumerate(ready)]
    sockets = []
    for s, slow in pending:
        if slow:
            try:
                s.send(b"GET /api/v1/status HTTP/1.1\r\n")
            except OSError:
                pass
        sockets.append((s, slow))
    opened = len(sockets)
    closed = {}
    start = time.time()
    next_dribble = start + 3
    while time.time() - start < opts.hold:
        for n, (s, slow) in enumerate(sockets):
            if n in closed:
                continue
            try:
                data = s.recv(4096)
                if data == b"":
                    closed[n] = time.time() - start
            except BlockingIOError:
                pass
            except OSError:
                closed[n] = time.time() - start
        if time.time() >= next_dribble:
            next_dribble += 3
            for n, (s, slow) in enumerate(sockets):
                if slow and n not in closed:
                    try:
                        s.send(b"X-Slow: 1\r\n")
                    except OSError:
                        closed[n] = time.time() - start
        time.sleep(0.1)
    for s, _ in sockets:
        s.close()
    times = sorted(closed.values())
    return {"opened": opened, "failed": failed, "closed_by_server": len(closed),
            "first_closed_after": times[0] if times else None}


def ticket(opts):
    """A one-time ticket for the event stream, asked for with the token."""
    conn = http.client.HTTPConnection("127.0.0.1", opts.port, timeout=5)
    conn.request("POST", "/api/v1/events/ticket", headers={"Authorization": "Bearer " + opts.token})
    return json.loads(conn.getresponse().read())["ticket"]


def websockets(opts):
    upgraded, refused = [], 0
    sources = sources_of(opts)
    for i in range(opts.websockets):
        source = sources[i % len(sources)]
        s = socket.create_connection(("127.0.0.1", opts.port), timeout=5, source_address=(source, 0))
        key = base64.b64encode(os.urandom(16)).decode()
        path = "/api/v1/events" + (f"?ticket={ticket(opts)}" if opts.token else "")
        s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{opts.port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        try:
            head = s.recv(4096)
        except OSError:
            head = b""
        if head.startswith(b"HTTP/1.1 101"):
            upgraded.append(s)
        else:
            refused += 1
            s.close()
    time.sleep(opts.hold)
    open_now = 0
    for s in upgraded:
        s.setblocking(False)
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if chunk == b"":
                    data = None  # the server closed the connection
                    break
                data += chunk
        except BlockingIOError:
            pass
        except OSError:
            data = None
        if data is not None and not closing(data):
            open_now += 1
        s.close()
    return {"upgraded": len(upgraded), "refused": refused, "open_at_end": open_now}


def sources_of(opts):
    return opts.sources.split(",") if opts.sources else [opts.source]


def connect_all(opts, count):
    """`count` connections from each source, made at once (non-blocking), those the kernel
    completed within 5 s."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    total = count * len(sources_of(opts))
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, total + 64)), hard))
    pending = []
    for source in sources_of(opts):
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((source, 0))
            s.setblocking(False)
            if s.connect_ex(("127.0.0.1", opts.port)) in (0, errno.EINPROGRESS):
                pending.append(s)
            else:
                s.close()
    # Those the kernel completed within 5 s (it completes as many as the listener's queue
    # holds, whether or not the server has accepted them yet; dropped SYNs are sent again).
    # poll, not select: a thousand connections pass select's 1024 descriptors.
    poller = select.poll()
    for s in pending:
        poller.register(s, select.POLLOUT)
    done = set()
    deadline = time.time() + 5
    while len(done) < len(pending) and time.time() < deadline:
        for fd, event in poller.poll(100):
            if event & select.POLLOUT:
                done.add(fd)
                poller.unregister(fd)
    ready = []
    for s in pending:
        if s.fileno() in done and s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
            ready.append(s)
        else:
            s.close()
    return ready


def heads(opts):
    sockets = connect_all(opts, opts.heads)
    head = ("GET /api/v1/status?" + "a" * opts.head_size + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").encode()
    for s in sockets:
        s.setblocking(True)
        s.settimeout(0.5)
        try:
            s.sendall(head)
        except OSError:
            pass
        s.setblocking(False)
    answered = closed = 0
    gone = set()
    start = time.time()
    while time.time() - start < opts.hold and len(gone) < len(sockets):
        for n, s in enumerate(sockets):
            if n in gone:
                continue
            try:
                data = s.recv(65536)
                if data.startswith(b"HTTP/1.1 431"):
                    answered += 1
                    gone.add(n)
                elif data == b"":
                    closed += 1
                    gone.add(n)
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
                gone.add(n)
        time.sleep(0.05)
    for s in sockets:
        s.close()
    return {"opened": len(sockets), "answered_431": answered, "closed_otherwise": closed, "open_at_end": len(sockets) - len(gone)}


def squat(opts):
    """Keep-alive connections that each ask once and then sit idle, opened anew when closed."""
    answered = closed = 0
    request = b"GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    held = {}
    start = time.time()
    while time.time() - start < opts.hold:
        # Top each source up to its count.
        for source in sources_of(opts):
            mine = [k for k, v in held.items() if v[1] == source]
            for _ in range(opts.squat - len(mine)):
                try:
                    s = socket.create_connection(("127.0.0.1", opts.port), timeout=1, source_address=(source, 0))
                    s.sendall(request)
                    s.setblocking(False)
                    held[s.fileno()] = (s, source)
                except OSError:
                    pass
        for key, (s, source) in list(held.items()):
            try:
                data = s.recv(65536)
                if data == b"":
                    closed += 1
                    s.close()
                    del held[key]
                elif data.startswith(b"HTTP/1.1 200"):
                    answered += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
                s.close()
                del held[key]
        time.sleep(0.05)
    for s, _ in held.values():
        s.close()
    return {"answered": answered, "closed_by_server": closed}


def post_statuses(sources, count, port, path, body, headers):
    """`count` POSTs of `body` to `path` from each source, one connection each: the statuses counted."""
    statuses = {}
    for source in sources:
        for _ in range(count):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5, source_address=(source, 0))
            conn.request("POST", path, body=body, headers=headers)
            status = str(conn.getresponse().status)
            statuses[status] = statuses.get(status, 0) + 1
            conn.close()
    return {"statuses": statuses}


def pair(opts):
    body = json.dumps({"publicKey": base64.b64encode(os.urandom(32)).decode(),
                       "proof": base64.b64encode(os.urandom(32)).decode(), "name": "stranger"}).encode()
    return post_statuses(sources_of(opts), opts.pair, opts.port, "/api/v1/pair", body, {"Content-Type": "application/json"})


def tokenless(opts):
    return post_statuses([opts.source], opts.tokenless, opts.port, "/api/v1/transport/pause", b"x", {"Content-Type": "text/plain"})


def closing(data):
    """Whether the server's WebSocket frames in `data` include a close frame."""
    i = 0
    while i + 2 <= len(data):
        opcode, length = data[i] & 0x0F, data[i + 1] & 0x7F
        i += 2
        if length == 126:
            length, i = int.from_bytes(data[i:i + 2], "big"), i + 2
        elif length == 127:
            length, i = int.from_bytes(data[i:i + 8], "big"), i + 8
        if opcode == 0x8:
            return True
        i += length
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--guess", type=int, default=0)
    ap.add_argument("--source", default="127.0.0.1")
    ap.add_argument("--connections", type=int, default=0)
    ap.add_argument("--websockets", type=int, default=0)
    ap.add_argument("--hold", type=float, default=15)
    ap.add_argument("--sources", default="", help="source addresses to take turns with (comma-separated)")
    ap.add_argument("--token", default="", help="the house token: each event stream with a one-time ticket")
    ap.add_argument("--heads", type=int, default=0)
    ap.add_argument("--head-size", type=int, default=100_000)
    ap.add_argument("--squat", type=int, default=0)
    ap.add_argument("--pair", type=int, default=0)
    ap.add_argument("--tokenless", type=int, default=0)
    opts = ap.parse_args()
    # The first mode asked for; holding connections when none is.
    modes = [(opts.guess, guess), (opts.websockets, websockets), (opts.heads, heads), (opts.squat, squat),
             (opts.pair, pair), (opts.tokenless, tokenless)]
    result = next((mode for asked, mode in modes if asked), hold)(opts)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
