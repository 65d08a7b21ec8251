#!/usr/bin/env python3
"""A web server for tutti's remote-source tests and benchmark, on loopback only.

Serves the files of one folder in the ways real servers behave:
  /files/NAME               a file, with byte ranges (206, Accept-Ranges: bytes)
  /norange/NAME             a file, always whole (200), no ranges
  /slow/NAME?bps=N          a file at N bytes a second (ranges served)
  /drop/NAME?after=N        a file whose connection drops after N bytes (each request)
  /radio/NAME?bps=N&metaint=M&titles=A|B&every=S&name=X&drop=T&chain=B|C
                            an endless ICY stream of NAME looped (then B, C, ... in turn: a
                            chained Ogg stream), paced at N bytes/s after a one-second burst,
                            with StreamTitle every M bytes (none when M is 0), the title
                            changing every S seconds; `drop` closes each connection after T s
  /hls/NAME.m3u8?seconds=D&window=W&titles=A|B&end=1
                            an HLS media playlist of the segments NAME0.ts, NAME1.ts, ... (each
                            D seconds): a live window of W segments sliding in real time and
                            looping over them (a discontinuity where it wraps), or all of them
                            and the end with end=1; EXTINF titles in turn
  /hls/FILE                 a segment
  /host                     the request's Host header, as text
  /hlsmaster/NAME.m3u8?...  a multivariant playlist: a video variant (which is not there) and
                            an audio-only one (/hls/NAME.m3u8 with the same query)
  /redirect/PATH            302 to /PATH
  /redirectto?url=URL       302 to URL (anywhere)
  /page                     an HTML page (not audio)
  /hostile/CASE?...         what a hostile station sends (FILE is the folder's noise.mp3):
      hls-target.m3u8?value=V&extinf=E   a live HLS playlist whose target duration is V and
                                          segments (FILE) E seconds long
      hls-sequence.m3u8?value=V          ... whose media sequence starts at V
      hls-extinf.m3u8?value=V            ... whose segments say they are V seconds long
      icy.mp3?br=B&metaint=M             an ICY station announcing icy-br B and icy-metaint M
      length.mp3?value=V                 FILE whole, its Content-Length header V
      resume.mp3?total=T                 FILE with ranges, dropped after 20,000 bytes; a
                                          range request answered 206 with Content-Length T
                                          and Content-Range total T
      fanout.m3u?width=W&depth=D         an M3U of W M3Us of the same, D deep, then W tracks
anything else               404
Prints "listening PORT" once ready; logs one line per request on standard output.
"""
import http.server
import os
import socketserver
import sys
import time
import urllib.parse

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
TYPES = {".mp3": "audio/mpeg", ".m3u": "audio/x-mpegurl", ".m3u8": "application/vnd.apple.mpegurl", ".pls": "audio/x-scpls",
         ".html": "text/html", ".txt": "text/plain", ".aac": "audio/aac", ".ogg": "audio/ogg", ".opus": "audio/ogg",
         ".flac": "audio/flac", ".m4a": "audio/mp4", ".wav": "audio/wav", ".ts": "video/mp2t"}
STARTED = time.monotonic()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *args):
        pass

    def note(self, status, extra=""):
        sys.stdout.write("%s %s %d %s\n" % (self.command, self.path, status, extra))
        sys.stdout.flush()

    def small(self, status, content_type, body):
        """A whole short answer at once."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.note(status)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        parts = url.path.lstrip("/").split("/", 1)
        kind, name = parts[0], (urllib.parse.unquote(parts[1]) if len(parts) > 1 else "")
        try:
            if kind == "redirectto":
                self.send_response(302)
                self.send_header("Location", query.get("url", "/"))
                self.end_headers()
                self.note(302)
                return
            if kind == "redirect":
                self.send_response(302)
                self.send_header("Location", "/" + url.path.split("/", 2)[2] + ("?" + url.query if url.query else ""))
                self.end_headers()
                self.note(302)
                return
            if kind == "host":
                # The Host header the request came with (a client that connects to an address
                # it checked names the host here).
                self.small(200, "text/plain", (self.headers.get("Host") or "").encode())
                return
            if kind == "page":
                self.small(200, "text/html", b"<html><body>not audio</body></html>")
                return
            if kind == "hostile":
                self.hostile(name, query)
                return
            if kind in ("hls", "hlsmaster") and name.endswith(".m3u8"):
                self.hls(name[:-5], query, kind == "hlsmaster", url.query)
                return
            path = os.path.join(ROOT, os.path.basename(name))
            if kind not in ("files", "norange", "slow", "drop", "radio", "hls") or not name or not os.path.isfile(path):
                self.send_error(404, "Not Found")
                self.note(404)
                return
            if kind == "radio":
                self.radio(path, query)
            else:
                self.file(path, kind, query)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def file(self, path, kind, query):
        data = open(path, "rb").read()
        start = 0
        ranged = kind != "norange" and self.headers.get("Range", "").startswith("bytes=")
        if ranged:
            first = self.headers["Range"][6:].split("-")[0]
            start = int(first) if first else 0
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.end_headers()
                self.note(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        if kind != "norange":
            self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", TYPES.get(os.path.splitext(path)[1], "application/octet-stream"))
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        self.note(206 if ranged else 200, "from %d" % start)
        body = data[start:]
        if kind == "drop":
            self.wfile.write(body[:int(query.get("after", "100000"))])
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        if kind == "slow":
            bps = int(query.get("bps", "16000"))
            chunk = max(1, bps // 20)
            for i in range(0, len(body), chunk):
                self.wfile.write(body[i:i + chunk])
                self.wfile.flush()
                time.sleep(0.05)
            return
        self.wfile.write(body)

    def text(self, body, kind="application/vnd.apple.mpegurl"):
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.note(200)

    def hls(self, name, query, master, raw_query):
        if master:
            self.text("#EXTM3U\n"
                      '#EXT-X-STREAM-INF:BANDWIDTH=2500000,CODECS="avc1.4d401f,mp4a.40.2"\n/hls/missing-video.m3u8\n'
                      '#EXT-X-STREAM-INF:BANDWIDTH=140000,CODECS="mp4a.40.2"\n/hls/%s.m3u8?%s\n' % (name, raw_query))
            return
        segments = sorted((f for f in os.listdir(ROOT) if f.startswith(name) and f.endswith(".ts") and f[len(name):-3].isdigit()),
                          key=lambda f: int(f[len(name):-3]))
        if not segments:
            self.send_error(404, "Not Found")
            self.note(404)
            return
        seconds = float(query.get("seconds", "2"))
        titles = [t for t in query.get("titles", "").split("|") if t]
        lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:%d" % int(seconds + 0.999)]
        if query.get("end") == "1":
            first, count = 0, len(segments)
        else:
            first, count = int((time.monotonic() - STARTED) / seconds), int(query.get("window", "4"))
        lines.append("#EXT-X-MEDIA-SEQUENCE:%d" % first)
        for sequence in range(first, first + count):
            index = sequence % len(segments)
            if index == 0 and sequence > 0:
                lines.append("#EXT-X-DISCONTINUITY")
            title = titles[sequence % len(titles)] if titles else ""
            lines.append("#EXTINF:%.3f,%s" % (seconds, title))
            lines.append(segments[index])
        if query.get("end") == "1":
            lines.append("#EXT-X-ENDLIST")
        self.text("\n".join(lines) + "\n")

    def raw(self, status, headers, body, close=True):
        """An answer with headers exactly as given (numbers no honest server sends)."""
        self.wfile.write(("HTTP/1.1 %d X\r\n" % status).encode())
        for key, value in headers:
            self.wfile.write(("%s: %s\r\n" % (key, value)).encode())
        self.wfile.write(b"Connection: close\r\n\r\n")
        self.wfile.write(body)
        self.wfile.flush()
        self.note(status)
        if close:
            self.connection.shutdown(2)

    def hostile(self, name, query):
        path = os.path.join(ROOT, "noise.mp3")
        value = query.get("value", "6")
        if name.startswith("hls-"):
            target, sequence, extinf = "6", "0", query.get("extinf", "6")
            if name == "hls-target.m3u8":
                target = value
            elif name == "hls-sequence.m3u8":
                sequence = value
            elif name == "hls-extinf.m3u8":
                extinf = value
            lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:" + target, "#EXT-X-MEDIA-SEQUENCE:" + sequence]
            for _ in range(3):
                lines += ["#EXTINF:%s," % extinf, "/files/noise.mp3"]
            self.text("\n".join(lines) + "\n")
        elif name == "icy.mp3":
            data = open(path, "rb").read()
            headers = [("Content-Type", "audio/mpeg"), ("icy-name", "Hostile"), ("icy-br", query.get("br", "128"))]
            if "metaint" in query:
                headers.append(("icy-metaint", query["metaint"]))
            self.raw(200, headers, data[:200_000])
        elif name == "length.mp3":
            data = open(path, "rb").read()
            self.raw(200, [("Content-Type", "audio/mpeg"), ("Content-Length", value)], data)
        elif name == "resume.mp3":
            data = open(path, "rb").read()
            total = query.get("total", str(len(data)))
            ranged = self.headers.get("Range", "").startswith("bytes=")
            if not ranged:
                self.raw(200, [("Content-Type", "audio/mpeg"), ("Content-Length", str(len(data))), ("Accept-Ranges", "bytes")],
                         data[:20_000])
            else:
                start = int(self.headers["Range"][6:].split("-")[0] or 0)
                self.raw(206, [("Content-Type", "audio/mpeg"), ("Content-Length", total), ("Accept-Ranges", "bytes"),
                               ("Content-Range", "bytes %d-%d/%s" % (start, len(data) - 1, total))], data[start:])
        elif name == "fanout.m3u":
            width, depth = int(query.get("width", "10")), int(query.get("depth", "1"))
            if depth > 0:
                entries = ["/hostile/fanout.m3u?width=%d&depth=%d&at=%s.%d" % (width, depth - 1, query.get("at", ""), i)
                           for i in range(width)]
            else:
                entries = ["/files/noise.mp3?at=%s.%d" % (query.get("at", ""), i) for i in range(width)]
            self.text("#EXTM3U\n" + "\n".join(entries) + "\n", "audio/x-mpegurl")
        else:
            self.send_error(404, "Not Found")
            self.note(404)

    def radio(self, path, query):
        data = open(path, "rb").read()
        for other in [c for c in query.get("chain", "").split("|") if c]:
            data += open(os.path.join(ROOT, os.path.basename(other)), "rb").read()
        bps = int(query.get("bps", "16000"))
        metaint = int(query.get("metaint", "8000"))
        titles = query.get("titles", "Artist - Song").split("|")
        every = float(query.get("every", "3"))
        drop = float(query.get("drop", "0"))
        icy = self.headers.get("Icy-MetaData") == "1" and metaint > 0
        self.send_response(200)
        self.send_header("Content-Type", TYPES.get(os.path.splitext(path)[1], "audio/mpeg"))
        self.send_header("icy-name", query.get("name", "Test Radio"))
        self.send_header("icy-br", str(bps * 8 // 1000))
        if icy:
            self.send_header("icy-metaint", str(metaint))
        self.end_headers()
        self.note(200, "icy" if icy else "")
        began = time.monotonic()
        sent = 0          # audio bytes sent
        position = 0      # in the file, looped
        until_meta = metaint
        last_title = None
        while True:
            now = time.monotonic() - began
            if drop and now >= drop:
                self.connection.shutdown(2)
                return
            allowed = bps * (now + 1.0)  # a one-second burst, then real time
            # Whole blocks, as Icecast sends them (not a trickle of tiny segments).
            block = min(2048, until_meta) if icy else 2048
            if allowed - sent < block:
                time.sleep(0.02)
                continue
            n = int(min(allowed - sent, 4096, until_meta if icy else 4096))
            piece = data[position:position + n]
            if len(piece) < n:
                piece += data[:n - len(piece)]
            position = (position + n) % len(data)
            self.wfile.write(piece)
            sent += n
            if icy:
                until_meta -= n
                if until_meta == 0:
                    title = titles[int(now / every) % len(titles)]
                    if title != last_title:
                        text = ("StreamTitle='%s';StreamUrl='';" % title).encode("utf-8")
                        text += b"\0" * (-len(text) % 16)
                        self.wfile.write(bytes([len(text) // 16]) + text)
                        last_title = title
                    else:
                        self.wfile.write(b"\0")
                    until_meta = metaint
            self.wfile.flush()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    server = Server(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    sys.stdout.write("listening %d\n" % server.server_address[1])
    sys.stdout.flush()
    server.serve_forever()
