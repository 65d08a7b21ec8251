#!/usr/bin/env python3
"""A benchmark's recording, to listen to or look at: bench/sync and bench/network keep each
measurement's recording in their work folder (NAME-RUN.npy: room A left, room B right, 48 kHz).

  bench/lib/play.py REC.npy --out rooms.wav [--from S] [--to S]     a stereo WAV of the stretch
  bench/lib/play.py REC.npy --plot around.png --at S [--span MS]    both rooms' waveforms around S

A hole (bench/lib/holes.py prints where) sounds as a click; on the plot (a PNG, room A above B,
a grey line every 5 ms) it is a stretch where one room's trace is flat while the other's moves.
"""
import argparse
import wave

import numpy as np

RATE = 48000


def write_wav(path, data):
    pcm = (np.clip(data, -1, 1) * 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(data.shape[1])
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def png(path, pixels):
    """Writes a greyscale image (rows of 0..255) as a PNG, with nothing but zlib."""
    import struct
    import zlib

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    h, w = pixels.shape
    raw = b"".join(b"\x00" + pixels[y].astype(np.uint8).tobytes() for y in range(h))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def plot(path, data, at, span_ms, width=1200, lane=160):
    """Each room's waveform around `at` (s), a lane each, as a PNG: per pixel column the
    range the samples under it span; a grey line every 5 ms."""
    lo = max(0, int((at - span_ms / 2000) * RATE))
    hi = min(len(data), int((at + span_ms / 2000) * RATE))
    rooms = data.shape[1]
    image = np.full((lane * rooms, width), 255, dtype=np.uint8)
    edges = np.linspace(lo, hi, width + 1).astype(int)
    scale = max(1e-6, float(np.max(np.abs(data[lo:hi]))))
    for i in range(rooms):
        top = i * lane
        image[top + lane // 2, :] = 200
        image[top, :] = 120
        for x in range(width):
            a, b = edges[x], max(edges[x] + 1, edges[x + 1])
            seg = data[a:b, i] / scale
            y0 = top + int((1 - seg.max()) / 2 * (lane - 4)) + 2
            y1 = top + int((1 - seg.min()) / 2 * (lane - 4)) + 2
            image[y0:y1 + 1, x] = 0
    for ms in np.arange(np.ceil(lo / RATE * 200) / 200, hi / RATE, 0.005):
        x = int((ms * RATE - lo) / (hi - lo) * width)
        if 0 <= x < width:
            image[:, x] = np.minimum(image[:, x], 180)
    png(path, image)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recording")
    ap.add_argument("--out")
    ap.add_argument("--from", dest="start", type=float, default=0.0)
    ap.add_argument("--to", dest="end", type=float)
    ap.add_argument("--plot")
    ap.add_argument("--at", type=float)
    ap.add_argument("--span", type=float, default=60.0, help="milliseconds shown around --at")
    opts = ap.parse_args()
    data = np.load(opts.recording)
    if opts.out:
        end = len(data) if opts.end is None else int(opts.end * RATE)
        write_wav(opts.out, data[int(opts.start * RATE):end])
    if opts.plot:
        plot(opts.plot, data, opts.at if opts.at is not None else opts.start, opts.span)


if __name__ == "__main__":
    main()
