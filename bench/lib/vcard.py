#!/usr/bin/env python3
"""When a virtual sound card (bench/vcard) played what: its recording (NAME.wav, float32)
with NAME.json ({"start_ns", "rate"}: frame k was heard at start_ns + k * 1e9 / rate on
this host's CLOCK_MONOTONIC), judged against the source, trusting nothing of the player.

Benchmarks judge rooms on cards of their own with `Card`, `skews` (two cards against each
other, each on its own crystal) and `holes`.

    vcard.py heard --card DIR/NAME --source SOURCE.wav --origin NS [--from S] [--to S] [--every S]
        For source frames every S seconds from S to S (positions in the track), the instant
        each was heard on the card (cross-correlation, to a fraction of a sample), less when
        the house said it would be (ORIGIN, the coordinator's time of the track's position 0,
        plus the position): one JSON line, {"errors_us": [...], "holes": N, "first_sound_ns": T}.
    vcard.py apart --cards DIR/A DIR/B [--from S]
        How much later card B played what card A played, every 50 ms from S seconds after
        both played on: {"skews_us": [...]}.
    vcard.py selftest
        `skews` and `heard` on cards made here of a known sound, on crystals apart and a known
        delay apart: {"cases": [...], "ok": true|false}.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import holes as holelib  # noqa: E402
import skew as skewlib  # noqa: E402

RATE = 48000  # the stream's frames per second of the house's clock (CLOCK_MONOTONIC here)


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


class Card:
    """A card's recording, its frames placed on this host's CLOCK_MONOTONIC (seconds, as the
    benchmarks' `now()`): frame k was heard at `time(k)`."""

    def __init__(self, path):
        self.path = path
        self.samples, self.meta = load(path)
        self.samples = self.samples.astype(np.float64)
        self.rate = float(self.meta["rate"])
        self.start = int(self.meta["start_ns"]) / 1e9
        self.step = RATE / self.rate  # the house's frames per frame of the card

    def time(self, frame):
        return self.start + frame / self.rate

    def frame(self, t):
        return (t - self.start) * self.rate

    def on(self, other):
        """`other`'s recording resampled (linearly) onto this card's frames: what it played at
        the instant each of this card's frames was heard (0 outside its recording)."""
        at = other.frame(self.time(np.arange(len(self.samples))))
        return np.interp(at, np.arange(len(other.samples)), other.samples, left=0.0, right=0.0)


def skews(a, b, start, end, window=0.1, hop=0.05, max_lag_ms=5.0, min_corr=0.8, min_rms=1e-3):
    """How much later card `b` plays what card `a` plays (µs), over windows of `a` from
    `start` to `end` (seconds of CLOCK_MONOTONIC): [(time, skew, correlation)]. Each
    window of `a` is found in `b` near the frame `b` played at the same instant (to a whole
    frame), then `b` is read at the instants of `a`'s frames (band-limited interpolation,
    `at_instants`) and the lag left is found to a fraction of a sample (skew.fine_lag): so
    each card's crystal counts exactly. Cards whose crystals differ hold the same 100 ms of
    sound in numbers of frames that differ (by 1.4 frames at 300 ppm); compared frame for
    frame, two windows match where most of their sound is (a drum hit at one end), and rooms
    in sync on cards 150 ppm either way read up to 16 µs apart, by the beat."""
    da = np.diff(a.samples, prepend=0.0)
    w, m = int(window * a.rate), int(max_lag_ms * b.rate / 1000)
    out = []
    for t in np.arange(start, end, hop):
        i = int(round(a.frame(t)))
        if i < 0 or i + w > len(a.samples) or np.sqrt(np.mean(a.samples[i:i + w] ** 2)) < min_rms:
            continue
        j = int(round(b.frame(a.time(i))))
        if j - m - 2 - TAPS < 0 or j + w + m + 2 + TAPS > len(b.samples):
            continue
        lag, _ = skewlib.lag(da[i:i + w], np.diff(b.samples[j:j + w], prepend=b.samples[j - 1]), m)
        # Frame for frame, the windows matched where they hold the same sound on average,
        # their middles: `b`'s frame there is this far from where `j` counts it.
        k = int(round(lag - (b.frame(a.time(i + w / 2)) - (j + w / 2))))
        # `b` at the instants of `a`'s frames i - 1 .. i + w - 1, k of its own frames later
        # (the first for the derivative only).
        seen = at_instants(b.samples, b.frame(a.time(i - 1 + np.arange(w + 1))) + k)
        corr = skewlib.same_sound(a.samples[i:i + w], seen[1:])
        if corr < min_corr:
            continue
        fine = skewlib.fine_lag(da[i:i + w], np.diff(seen))
        if fine is None:
            continue
        mid = i + w / 2
        out.append((a.time(mid), (k / b.rate + fine / a.rate) * 1e6, float(corr)))
    return out


TAPS = 16  # each side of a band-limited interpolation


def at_instants(x, positions):
    """`x` read at fractional frame `positions` (a Hann-windowed sinc, 2 × TAPS taps: exact
    to well under a microsecond for sound band-limited below 20 kHz at 48 kHz)."""
    positions = np.asarray(positions, dtype=np.float64)
    base = np.floor(positions).astype(np.int64)
    frac = positions - base
    k = np.arange(-TAPS + 1, TAPS + 1)
    t = frac[:, None] - k[None, :]
    weights = np.sinc(t) * (0.5 + 0.5 * np.cos(np.pi * t / TAPS))
    return (x[np.clip(base[:, None] + k[None, :], 0, len(x) - 1)] * weights).sum(axis=1)


def first_sound(card, after):
    """The first instant (CLOCK_MONOTONIC seconds) from `after` on when `card` sounds, or None."""
    frame = holelib.first_sound(card.samples, RATE, max(0, int(card.frame(after))))
    return None if frame is None else card.time(frame)


def holes(cards, source, fed, spans, settle=1.0):
    """Holes in every card's recording (bench/lib/holes.py's judge), each on its own frames:
    `source` is what the coordinator was fed (looped, mono), its frame 0 written at `fed`
    (CLOCK_MONOTONIC seconds); `spans[i]` = (from, to or None) seconds of card i's measured
    span, counted from `settle` seconds after its first sound in it. The other cards,
    resampled onto a card's frames, tell a concealed block from the music's own noise."""
    begins, lags = [], []
    for card, (since, _) in zip(cards, spans):
        sound = holelib.first_sound(card.samples, RATE, max(0, int(card.frame(since))))
        begins.append(None if sound is None else sound + int(settle * card.rate))
        if sound is not None:
            guess = lambda j, c=card: (c.time(j) - fed) * RATE
            lags.append(holelib.lag_of(card.samples, source, RATE, card.step, guess, begins[-1]))
    lags = [lag for lag in lags if lag is not None]
    out = []
    for i, (card, (_, until)) in enumerate(zip(cards, spans)):
        if begins[i] is None:
            out.append({"holes": 0, "seconds": 0.0, "silent": 0, "at": [], "sound_at": None})
            continue
        last = len(card.samples) if until is None else min(len(card.samples), int(card.frame(until)))
        others = [card.on(other) for k, other in enumerate(cards) if k != i]
        guess = lambda j, c=card: (c.time(j) - fed) * RATE
        result = holelib.judge(card.samples, source, RATE, card.step, guess, begins[i], last, lags, others)
        result["at"] = [card.time(f * RATE) for f in result["at"]]  # CLOCK_MONOTONIC seconds
        out.append(result)
    return out


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
        # Matched at the windows' middles (see `skews`): a card 150 ppm off holds the
        # source's 50 ms in 0.36 frames more or less.
        at = start_ns + (lo + best + shift + window / 2) * 1e9 / rate
        errors.append((at - expected - window / 2 / src_rate * 1e9) / 1e3)
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


class Synthetic(Card):
    """A card that heard `sound(t)` (a function of CLOCK_MONOTONIC seconds) at each of its
    frames, from `start` for `seconds`, on a crystal `ppm` off."""

    def __init__(self, sound, start, seconds, ppm):
        self.path = None
        self.meta = {"start_ns": int(start * 1e9), "rate": RATE * (1 + ppm * 1e-6)}
        self.rate = float(self.meta["rate"])
        self.start = start
        self.step = RATE / self.rate
        self.samples = sound(self.time(np.arange(int(seconds * self.rate))))


def selftest():
    """Rooms a known delay apart (0 and 7 µs), on cards with true crystals, 150 ppm either
    way and 500 ppm apart, playing a sound with a beat: `skews` must find the delay within
    0.5 µs in every window, and `heard` each card's error against the source within 0.5 µs
    (median)."""
    import tempfile
    import wave
    rng = np.random.default_rng(7)
    # A sound band-limited well below the cards' Nyquist (240 tones, pink), defined at any
    # instant by its Fourier series, so each card samples it exactly where its crystal says.
    length, seconds = 4.0, 2.0
    freqs = np.sort(rng.uniform(20, 8000, 240))
    amps = 0.05 / np.sqrt(freqs / 20)
    phases = rng.uniform(0, 2 * np.pi, len(freqs))

    def sound(t, delay=0.0):
        t = np.asarray(t, dtype=np.float64) - delay
        out = np.zeros_like(t)
        for chunk in range(0, len(freqs), 200):
            f, a, p = freqs[chunk:chunk + 200], amps[chunk:chunk + 200], phases[chunk:chunk + 200]
            out += (a[None, :] * np.sin(2 * np.pi * f[None, :] * t[:, None] + p[None, :])).sum(axis=1)
        # A hit every half second, as a beat: most of a window's sound at one end of it (a
        # window matched frame for frame then reads rooms on crystals apart up to 16 µs off).
        # (Its attack takes 2 ms: a sudden one would reach beyond the cards' Nyquist.)
        beat = np.mod(t - 0.013, 0.5)
        return out * (0.15 + (1 - np.exp(-beat / 0.002)) * np.exp(-beat / 0.015))

    origin = 100.0  # the source's frame 0 is due at 100 s of CLOCK_MONOTONIC
    source = sound(origin + np.arange(int(length * RATE)) / RATE)
    cases, ok = [], True
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "source.wav")
        with wave.open(path, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes((np.clip(source, -1, 1) * 32767).astype("<i2").tobytes())
        for ppms in ((0, 0), (-150, 150), (250, -250)):
            for delay_us in (0.0, 7.0):
                a = Synthetic(lambda t: sound(t), origin + 0.2, seconds, ppms[0])
                b = Synthetic(lambda t, d=delay_us: sound(t, d * 1e-6), origin + 0.25, seconds, ppms[1])
                found = [s for _, s, _ in skews(a, b, origin + 0.4, origin + 0.2 + seconds - 0.2)]
                errors = []
                for card, late in ((a, 0.0), (b, delay_us)):
                    card.path = os.path.join(work, f"card{len(cases)}{'ab'[card is b]}")
                    write(card)
                    result = heard(card.path, path, origin * 1e9, 0.5, 1.9, 0.1)
                    errors.append(float(np.median(result["errors_us"])) - late if result["errors_us"] else float("nan"))
                case = {"ppm": list(ppms), "delay_us": delay_us, "skew_us": float(np.median(found)) if found else float("nan"),
                        "worst_us": float(max(abs(s - delay_us) for s in found)) if found else float("nan"),
                        "windows": len(found), "heard_error_us": errors}
                good = len(found) >= 20 and case["worst_us"] <= 0.5 and all(abs(e) <= 0.5 for e in errors)
                ok = ok and good
                cases.append(case)
    return {"cases": cases, "ok": bool(ok)}


def write(card):
    """Writes a card's recording and JSON as the plugin does (float32 WAV, one channel)."""
    data = card.samples.astype("<f4").tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 3, 1, RATE, RATE * 4, 4, 32)
    open(card.path + ".wav", "wb").write(header + b"data" + struct.pack("<I", len(data)) + data)
    json.dump(card.meta, open(card.path + ".json", "w"))


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
    h.add_argument("--search-ms", type=float, default=50, help="how far from where the house says a frame is looked for")
    a = sub.add_parser("apart")
    a.add_argument("--cards", nargs=2, required=True, metavar="DIR/NAME")
    a.add_argument("--from", dest="start", type=float, default=0, help="seconds after the later card's first frame")
    sub.add_parser("selftest")
    opts = ap.parse_args()
    if opts.command == "selftest":
        result = selftest()
        print(json.dumps(result))
        return 0 if result["ok"] else 1
    if opts.command == "heard":
        print(json.dumps(heard(opts.card, opts.source, opts.origin, opts.start, opts.end, opts.every,
                               search=int(opts.search_ms * RATE / 1000))))
    else:
        first, second = Card(opts.cards[0]), Card(opts.cards[1])
        begin = max(first.start, second.start) + opts.start
        end = min(first.time(len(first.samples)), second.time(len(second.samples)))
        print(json.dumps({"skews_us": [round(s, 2) for _, s, _ in skews(first, second, begin, end)]}))


if __name__ == "__main__":
    sys.exit(main())
