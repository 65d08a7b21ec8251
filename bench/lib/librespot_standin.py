#!/usr/bin/env python3
"""A stand-in for librespot (Spotify Connect), for tests on a machine without it: it takes
librespot's arguments, then behaves as librespot does when a phone plays to it. It runs its
--onevent hook as librespot does (the event in the environment: session_connected, then
track_changed with NAME, ARTISTS one per line and ALBUM, then playing), writes a tone as
raw S16LE stereo at 44.1 kHz into the --device pipe as fast as the pipe takes (librespot's
pipe backend does not pace itself), says paused, and waits to be stopped.

Settings from the environment: STANDIN_SECONDS (the tone's length, 6), STANDIN_HERTZ (660),
STANDIN_PIDFILE (where to write its process id)."""
import argparse
import math
import os
import signal
import struct
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser(prog="librespot")
    parser.add_argument("--name", required=True)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--device", required=True)
    parser.add_argument("--format", default="S16")
    parser.add_argument("--bitrate", default="160")
    parser.add_argument("--onevent")
    args = parser.parse_args()
    if args.backend != "pipe" or args.format != "S16":
        print(f"librespot stand-in: only --backend pipe --format S16, not {args.backend} {args.format}", file=sys.stderr)
        return 1
    if os.environ.get("STANDIN_PIDFILE"):
        with open(os.environ["STANDIN_PIDFILE"], "w") as f:
            f.write(str(os.getpid()))
    print(f"[librespot] Using pipe sink with format: S16; name {args.name}", file=sys.stderr, flush=True)

    def event(kind, **fields):
        if args.onevent:
            env = dict(os.environ, PLAYER_EVENT=kind, **fields)
            subprocess.run(args.onevent.split(), env=env, check=False, timeout=10)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    time.sleep(0.5)
    event("session_connected", USER_NAME="listener")
    event("track_changed", TRACK_ID="6rqhFgbbKwnb9MLmUQDhG6", NAME="Hljómalind", ARTISTS="Sigur Rós\nJónsi",
          ALBUM="Með suð í eyrum við spilum endalaust", DURATION_MS="6000")
    event("playing", TRACK_ID="6rqhFgbbKwnb9MLmUQDhG6", POSITION_MS="0")
    seconds = float(os.environ.get("STANDIN_SECONDS", "6"))
    hertz = float(os.environ.get("STANDIN_HERTZ", "660"))
    frames = int(seconds * 44100)
    with open(args.device, "wb", buffering=0) as pipe:
        block = 4410
        for start in range(0, frames, block):
            samples = []
            for i in range(start, min(frames, start + block)):
                v = int(0.4 * 32767 * math.sin(2 * math.pi * hertz * i / 44100))
                samples += [v, v]
            pipe.write(struct.pack(f"<{len(samples)}h", *samples))
    event("paused", TRACK_ID="6rqhFgbbKwnb9MLmUQDhG6", POSITION_MS=str(int(seconds * 1000)))
    while True:
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
