#!/usr/bin/env python3
"""A stand-in for shairport-sync played to by an iPhone, for tests of what only such a sender
does: no AirPlay sender that runs here (PulseAudio's RAOP sink) gives its receiver a remote
control. It takes the arguments tutti gives shairport-sync, then behaves as shairport-sync
does while a phone plays to it: into the metadata pipe, the phone's name and its remote
(`acre`, `daid`, `clip`, `dapo`, as shairport-sync 3.3 writes them), the track's fields
between `mdst` and `mden`, and `pbeg`; into the audio pipe, raw S16LE stereo at 44.1 kHz at
the sender's pace (real time).

It is the phone too: its remote control (DACP) is an HTTP server on 127.0.0.1 that takes
`GET /ctrl-int/1/COMMAND` with the session's Active-Remote token, answers 204, and does what
a phone does: `pause` stops the audio, `play` starts it again, `nextitem` and `previtem`
change the track (its title, and its tone: 550 Hz for track 1, 660 Hz for track 2, ...).
A request without the token gets 403. Each request is logged to STANDIN_DACP_LOG as
`COMMAND TOKEN`.

Settings from the environment: STANDIN_DACP_LOG, STANDIN_PIDFILE, STANDIN_ANNOUNCE_PORT
(0: leave `dapo` out, as shairport-sync does until it has resolved the phone's service, and
announce the remote with avahi-publish, as the phone does)."""
import argparse
import base64
import http.server
import math
import os
import signal
import struct
import subprocess
import sys
import threading
import time

ACTIVE_REMOTE = "2876319871"
DACP_ID = "1A2B3C4D5E6F7081"


class Phone:
    def __init__(self):
        self.lock = threading.Lock()
        self.playing = True
        self.track = 1
        self.changed = threading.Event()

    def hertz(self):
        return 440 + 110 * self.track


def item(kind, code, data=None):
    head = f"<item><type>{kind.encode().hex()}</type><code>{code.encode().hex()}</code>"
    if data is None:
        return head + "<length>0</length></item>\n"
    raw = data.encode()
    return head + f"<length>{len(raw)}</length>\n<data encoding=\"base64\">\n{base64.b64encode(raw).decode()}</data></item>\n"


def main():
    parser = argparse.ArgumentParser(prog="shairport-sync")
    parser.add_argument("--name", required=True)
    parser.add_argument("--port")
    parser.add_argument("--use-stderr", action="store_true")
    parser.add_argument("--metadata-enable", action="store_true")
    parser.add_argument("--get-coverart", action="store_true")
    parser.add_argument("--metadata-pipename", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("audio", nargs="?")
    args, rest = parser.parse_known_args()
    audio = args.audio or (rest[-1] if rest else None)
    if args.output != "pipe" or not audio:
        print(f"shairport-sync stand-in: only --output=pipe -- PATH, not {args.output} {audio}", file=sys.stderr)
        return 1
    if os.environ.get("STANDIN_PIDFILE"):
        with open(os.environ["STANDIN_PIDFILE"], "w") as f:
            f.write(str(os.getpid()))
    children = []
    signal.signal(signal.SIGTERM, lambda *_: ([c.terminate() for c in children], os._exit(0)))
    phone = Phone()
    log_path = os.environ.get("STANDIN_DACP_LOG")

    class Remote(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            command = self.path.rsplit("/", 1)[-1]
            token = self.headers.get("Active-Remote", "")
            if log_path:
                with open(log_path, "a") as f:
                    f.write(f"{command} {token}\n")
            if not self.path.startswith("/ctrl-int/1/") or token != ACTIVE_REMOTE:
                self.send_response(403)
                self.end_headers()
                return
            with phone.lock:
                if command == "pause":
                    phone.playing = False
                elif command == "play":
                    phone.playing = True
                elif command == "playpause":
                    phone.playing = not phone.playing
                elif command == "nextitem":
                    phone.track += 1
                elif command == "previtem":
                    phone.track = max(1, phone.track - 1)
                phone.changed.set()
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Remote)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    announce = os.environ.get("STANDIN_ANNOUNCE_PORT", "1") != "0"
    if not announce:
        # The phone announces its remote by mDNS, as iOS does; the receiver is not told the port.
        children.append(subprocess.Popen(["avahi-publish", "-s", f"iTunes_Ctrl_{DACP_ID}", "_dacp._tcp", str(server.server_port)],
                         stdout=subprocess.DEVNULL, stderr=sys.stderr))
    print(f"shairport-sync stand-in: {args.name}; the phone's remote on port {server.server_port}", file=sys.stderr, flush=True)

    metadata = open(args.metadata_pipename, "w", buffering=1)

    def say(text):
        metadata.write(text)
        metadata.flush()

    def announce_track(track):
        say(item("ssnc", "mdst") + item("core", "minm", f"Track {track}") + item("core", "asar", "The Phone")
            + item("core", "asal", "Pocket") + item("ssnc", "mden"))

    time.sleep(0.5)
    say(item("ssnc", "snam", "Listener's iPhone") + item("ssnc", "acre", ACTIVE_REMOTE) + item("ssnc", "daid", DACP_ID)
        + item("ssnc", "clip", "127.0.0.1") + item("ssnc", "svip", "127.0.0.1"))
    if announce:
        say(item("ssnc", "dapo", str(server.server_port)))
    say(item("ssnc", "pbeg"))
    announce_track(1)

    pipe = open(audio, "wb", buffering=0)
    block = 441  # 10 ms
    start = time.monotonic()
    sent = 0
    phase = 0.0
    shown = 1
    while True:
        with phone.lock:
            playing, track, hertz = phone.playing, phone.track, phone.hertz()
            phone.changed.clear()
        if track != shown:
            announce_track(track)
            shown = track
        if not playing:
            # A paused phone sends nothing; shairport-sync says so.
            say(item("ssnc", "pfls"))
            phone.changed.wait()
            say(item("ssnc", "prsm"))
            start, sent = time.monotonic(), 0
            continue
        samples = []
        for _ in range(block):
            phase += 2 * math.pi * hertz / 44100
            v = int(0.4 * 32767 * math.sin(phase))
            samples += [v, v]
        pipe.write(struct.pack(f"<{len(samples)}h", *samples))
        sent += block
        ahead = start + sent / 44100 - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)


if __name__ == "__main__":
    sys.exit(main())
