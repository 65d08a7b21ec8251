#!/usr/bin/env python3
"""Sliding-window skew between the left and right channels of a WAV recording.

The left channel is room A, the right room B (see docs/timing.md, "the measuring rig").
Both signals are differentiated (whitened) and cross-correlated in short windows; the
peak is refined with parabolic interpolation. Prints one line per window: time (s),
skew (µs, positive when B plays later than A), peak correlation.
"""
import sys
import numpy as np


def read(path):
    """Reads a 16-bit PCM WAV, tolerating the unfinished sizes a killed recorder leaves."""
    raw = open(path, "rb").read()
    pos, ch, rate, data = 12, 2, 48000, None
    while pos + 8 <= len(raw):
        cid = raw[pos : pos + 4]
        size = int.from_bytes(raw[pos + 4 : pos + 8], "little")
        if cid == b"fmt ":
            ch = int.from_bytes(raw[pos + 10 : pos + 12], "little")
            rate = int.from_bytes(raw[pos + 12 : pos + 16], "little")
        elif cid == b"data":
            end = len(raw) if size in (0, 0xFFFFFFFF) or pos + 8 + size > len(raw) else pos + 8 + size
            data = raw[pos + 8 : end]
            break
        pos += 8 + size + (size & 1)
    if data is None:
        raise ValueError(f"{path}: no data chunk")
    samples = np.frombuffer(data[: len(data) - len(data) % (2 * ch)], dtype="<i2").astype(np.float64) / 32768.0
    return samples.reshape(-1, ch), rate


def lag(a, b, max_lag):
    """Lag of b behind a (samples, fractional) and the normalized peak correlation."""
    n = len(a)
    size = 1 << int(np.ceil(np.log2(2 * n)))
    fa = np.fft.rfft(a, size)
    fb = np.fft.rfft(b, size)
    cc = np.fft.irfft(np.conj(fa) * fb, size)
    cc = np.concatenate((cc[-max_lag:], cc[: max_lag + 1]))
    k = int(np.argmax(cc))
    peak = cc[k]
    frac = 0.0
    if 0 < k < len(cc) - 1:
        y0, y1, y2 = cc[k - 1], cc[k], cc[k + 1]
        d = y0 - 2 * y1 + y2
        if d < 0:
            frac = 0.5 * (y0 - y2) / d
    norm = np.sqrt(np.dot(a, a) * np.dot(b, b))
    return (k - max_lag) + frac, (peak / norm if norm > 0 else 0.0)


def skews(left, right, rate, window=0.1, hop=0.1, max_lag_ms=5.0, min_corr=0.8, min_rms=1e-3):
    a = np.diff(left, prepend=0.0)
    b = np.diff(right, prepend=0.0)
    w = int(window * rate)
    h = int(hop * rate)
    m = int(max_lag_ms * rate / 1000)
    out = []
    for start in range(m, len(a) - w - m, h):
        seg_a = a[start : start + w]
        seg_b = b[start : start + w]
        if np.sqrt(np.mean(left[start : start + w] ** 2)) < min_rms:
            continue
        l, c = lag(seg_a, seg_b, m)
        if c >= min_corr:
            out.append((start / rate, l / rate * 1e6, c))
    return out


if __name__ == "__main__":
    data, rate = read(sys.argv[1])
    for t, s, c in skews(data[:, 0], data[:, 1], rate):
        print(f"{t:.2f} {s:.1f} {c:.3f}")
