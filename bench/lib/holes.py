"""Holes: the stretches where a room was silent, or played something else (a concealed
packet, a device that ran dry and came back), while the source had sound there.

Every benchmark that plays audio counts them in every room (docs/timing.md, "The
measuring rig"). A room's recording is followed against the source it was fed
(`skew.follow_source`: which source position each 100 ms of the room plays; each window
then aligned to a fraction of a sample). Two kinds of stretch are holes where the source
is loud (over -40 dBFS in the 5 ms around them):

* **Silence**: 1 ms or more of digital silence (what a device that ran dry plays, and what
  a concealment fades to).
* **Something else**: a 5 ms block whose residual, after the source at the room's level is
  taken out, is more than half the source's level (a concealed packet, a jump), and which
  differs from every other room as much, where other rooms were recorded beside it. A
  clean block of Opus at 128 kb/s leaves a few percent against the source, but up to
  half in a few quiet, noisy passages of the demo song, which the other rooms, playing
  the same decoded stream, share.

Windows the follower could not place (a room that played something else for 100 ms) are
placed at the lags most windows were found at, so a room that goes silent for a while
counts every block of it. Stretches closer than 5 ms make one hole.
"""
from collections import Counter

import numpy as np

import skew as skewlib

BLOCK = 0.005
LOUD = 1e-2          # the source's level (RMS over 5 ms, full scale 1) above which a room must sound (-40 dBFS)
QUIET = 2.5 / 32768  # digital silence, as a 16-bit recording holds it
SILENCE = 0.001      # the shortest run of silence counted
MISMATCH = 0.5       # a residual over this fraction of the source's level is not the source


def aligned(seg, wide, reach):
    """The stretch of `wide` (len(seg) + 2 * reach samples) that `seg` plays, aligned to a
    fraction of a sample (the peak of their correlation, refined on a parabola, and `wide`
    moved by that fraction in its spectrum), and their correlation."""
    n = len(seg)
    # On the signals' differences (whitened): music's low notes make a broad peak.
    cc = np.correlate(np.diff(wide, prepend=wide[0]), np.diff(seg, prepend=seg[0]), "valid")
    k = int(np.argmax(cc))
    frac = 0.0
    if 0 < k < len(cc) - 1:
        y0, y1, y2 = cc[k - 1], cc[k], cc[k + 1]
        d = y0 - 2 * y1 + y2
        if d < 0:
            frac = 0.5 * (y0 - y2) / d
    f = np.fft.rfftfreq(len(wide))
    shifted = np.fft.irfft(np.fft.rfft(wide) * np.exp(2j * np.pi * f * (k + frac)), len(wide))[:n]
    norm = np.sqrt(np.dot(seg, seg) * np.dot(shifted, shifted))
    return shifted, (float(np.dot(seg, shifted)) / norm if norm > 0 else 0.0)


def placed(x, source, rate, step, windows, window=0.1, reach=6):
    """[(recording frame, the source's stretch the window plays, aligned; the room's gain
    there, or None where it does not play the source well)] for every window of `x` whose
    position was found or can be guessed."""
    w = int(window * rate)
    # A room plays the source at a lag that changes only where it steps: the lags most
    # windows were found at are guesses for every window (music that repeats bar for bar
    # can match a window, or a whole run of them, a beat off; a window not found has only
    # its predecessor's lag).
    ms = rate / 1000
    lags = [round((j * step - found) / ms) for j, found, _, _ in windows if found is not None]
    usual = [float(np.median([j * step - found for j, found, _, _ in windows
                              if found is not None and round((j * step - found) / ms) == lag]))
             for lag, _ in Counter(lags).most_common(3)]
    out = []
    for j, found, _, predicted in windows:
        if j + w > len(x):
            continue
        guesses = {round(p, 3) for p in [found, predicted] + [j * step - lag for lag in usual] if p is not None}
        seg = x[j:j + w]
        best = max((aligned(seg, skewlib.looped(source, p - reach, w + 2 * reach, step), reach) for p in guesses),
                   key=lambda a: a[1], default=None)
        if best is None:
            continue
        ref, corr = best
        energy = float(np.dot(ref, ref))
        out.append((j, ref, float(np.dot(seg, ref)) / energy if energy > 0 and corr > 0.9 else None))
    return out


def count(x, source, rate, step, windows, others=(), keep=lambda frame: True):
    """Holes in room recording `x` (see the module's doc): {"holes": stretches, "seconds":
    their length, "silent": holes of silence, "at": [recording seconds of each hole's
    start]}. `windows` is `skew.follow_source`'s answer for `x`; `others`, the other rooms'
    recordings on the same recorder; `keep(frame)` limits the count to the measured span."""
    w = int(0.1 * rate)
    b = int(BLOCK * rate)
    shortest = int(SILENCE * rate)
    spots = placed(x, source, rate, step, windows)
    gains = [g for _, _, g in spots if g is not None]
    usual = float(np.median(gains)) if gains else 0.0
    bad = []  # (first frame, last frame, silent)
    for j, ref, fitted in spots:
        gain = usual if fitted is None else fitted
        if gain <= 0:
            continue
        seg = x[j:j + w]
        loud = [float(np.sqrt(np.mean(ref[k:k + b] ** 2))) >= LOUD for k in range(0, w - b + 1, b)]
        # Silence: runs of digital silence where the source sounds.
        quiet = np.abs(seg) <= QUIET
        edges = np.flatnonzero(np.diff(np.concatenate(([0], quiet.astype(np.int8), [0]))))
        for start, end in zip(edges[::2], edges[1::2]):
            if end - start >= shortest and float(np.sqrt(np.mean(ref[start:end] ** 2))) >= LOUD and keep(j + start):
                bad.append((j + start, j + end, True))
        # Something else: blocks that match neither the source nor the other rooms.
        peers = []
        for other in others:
            reach = int(0.002 * rate)  # rooms play within microseconds of each other (Snapcast's: within a millisecond or two)
            lo, hi = j - reach, j + w + reach
            if lo >= 0 and hi <= len(other):
                peers.append(aligned(seg, other[lo:hi], reach)[0])
        for i, k in enumerate(range(0, w - b + 1, b)):
            if not loud[i] or not keep(j + k):
                continue
            s = seg[k:k + b]
            expected = gain * float(np.sqrt(np.mean(ref[k:k + b] ** 2)))
            if float(np.sqrt(np.mean((s - gain * ref[k:k + b]) ** 2))) <= MISMATCH * expected:
                continue
            if all(float(np.sqrt(np.mean((s - p[k:k + b]) ** 2))) > MISMATCH * expected for p in peers):
                bad.append((j + k, j + k + b, False))
    bad.sort()
    stretches = []  # [first frame, last frame, silent]
    for start, end, quiet in bad:
        if stretches and start - stretches[-1][1] <= b:
            stretches[-1][1] = max(stretches[-1][1], end)
            stretches[-1][2] = stretches[-1][2] or quiet
        else:
            stretches.append([start, end, quiet])
    return {"holes": len(stretches), "seconds": sum(e - s for s, e, _ in stretches) / rate,
            "silent": sum(1 for *_, quiet in stretches if quiet), "at": [s / rate for s, _, _ in stretches]}
