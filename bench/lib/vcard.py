#!/usr/bin/env python3
"""When a virtual sound card (bench/vcard) played what: its recording (NAME.wav, float32)
with NAME.json ({"start_ns", "rate"}: frame k was heard at start_ns + k * 1e9 / rate on
this host's CLOCK_MONOTONIC), judged against the source, trusting nothing of the player.

    vcard.py heard --card DIR/NAME --source SOURCE.wav --origin NS [--from S] [--to S] [--every S]
        For source frames every S seconds from S to S (positions in the track), the instant
        each was heard on the card (cross-correlation, to a fraction of a sample), less when
        the house said it would be (ORIGIN, the coordinator's time of the track's position 0,
        plus the position): one JSON line, {"errors_us": [...], "holes": N, "first_sound_ns": T}.
"""
import argparse
import json
import struct
import sys

import numpy as np


def load(card, mono=True):
    """A card's recording (its channels mixed to one, unless not `mono`) and its JSON."""
    raw = open(card + ".wav", "rb").read()
    meta = json.load(open(card + ".json"))
    channels = struct.unpack("<H", raw[22:24])[0]
    at = raw.index(b"data")
    size = struct.unpack("<I", raw[at + 4:at + 8])[0]
    samples = np.frombuffer(raw[at + 8:at + 8 + size], dtype="<f4")
    samples = samples[:len(samples) // channels * channels].reshape(-1, channels)
    return (samples.mean(axis=1) if mono else samples), meta


def source_mono(path):
    import wave
    w = wave.open(path)
    width, channels = w.getsampwidth(), w.getnchannels()
    data = w.readframes(w.getnframes())
    kind = {2: "<i2", 4: "<i4"}[width]
    x = np.frombuffer(data, dtype=kind).astype(np.float64) / (2 ** (8 * width - 1))
    return x.reshape(-1, channels).mean(axis=1), w.getframerate()


def heard(card, source, origin, start, end, every, window=2400, search=2400):
    rec, meta = load(card)
    src, src_rate = source_mono(source)
    rate, start_ns = float(meta["rate"]), int(meta["start_ns"])
    errors = []
    for position in np.arange(start, end, every):
        frame = int(round(position * src_rate))
        if frame + window > len(src):
            break
        expected = origin + position * 1e9
        k0 = int(round((expected - start_ns) * rate / 1e9))
        lo = k0 - search
        if lo < 0 or k0 + search + window > len(rec):
            continue
        block = src[frame:frame + window]
        if np.sqrt(np.mean(block ** 2)) < 1e-3:
            continue
        stretch = rec[lo:lo + 2 * search + window].astype(np.float64)
        corr = np.correlate(stretch, block, mode="valid")
        energy = np.sqrt(np.convolve(stretch ** 2, np.ones(window), mode="valid")) * np.sqrt(np.sum(block ** 2)) + 1e-12
        score = corr / energy
        best = int(np.argmax(score))
        if score[best] < 0.5:
            continue
        shift = 0.0
        if 0 < best < len(corr) - 1:
            a, b, c = corr[best - 1], corr[best], corr[best + 1]
            denominator = a - 2 * b + c
            shift = 0.5 * (a - c) / denominator if denominator != 0 else 0.0
        at = start_ns + (lo + best + shift) * 1e9 / rate
        errors.append((at - expected) / 1e3)
    # Holes: 5 ms of digital silence after the first sound, while the card played.
    loud = np.flatnonzero(np.abs(rec) > 1e-4)
    holes = 0
    first = None
    if len(loud):
        first = start_ns + loud[0] * 1e9 / rate
        quiet = np.abs(rec[loud[0]:loud[-1]]) <= 2.5 / 32768
        edges = np.flatnonzero(np.diff(np.concatenate(([0], quiet.astype(np.int8), [0]))))
        shortest = int(0.005 * rate)
        holes = int(sum(1 for s, e in zip(edges[::2], edges[1::2]) if e - s >= shortest))
    return {"errors_us": [round(e, 2) for e in errors], "holes": holes, "first_sound_ns": first}


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    h = sub.add_parser("heard")
    h.add_argument("--card", required=True)
    h.add_argument("--source", required=True)
    h.add_argument("--origin", type=float, required=True)
    h.add_argument("--from", dest="start", type=float, default=1)
    h.add_argument("--to", dest="end", type=float, default=1e9)
    h.add_argument("--every", type=float, default=0.25)
    opts = ap.parse_args()
    print(json.dumps(heard(opts.card, opts.source, opts.origin, opts.start, opts.end, opts.every)))


if __name__ == "__main__":
    sys.exit(main())
