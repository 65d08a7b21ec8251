"""Holes: the stretches where a room was silent, or played something else (a concealed
packet, a device that ran dry and came back), while the source had sound there.

Every benchmark that plays audio counts them in every room (docs/timing.md, "The
measuring rig"). A room's recording is followed against the source it was fed
(`skew.follow_source`: which source position each 100 ms of the room plays; each window
then aligned to a fraction of a sample). Two kinds of stretch are holes where the source
is loud (over -40 dBFS in the 5 ms around them):

* **Silence**: 4 ms or more of digital silence (what a device that ran dry plays, and what
  a concealment fades to), the source sounding in all of it but its first and last 1.5 ms
  (a window placed a millisecond off must not turn the music's own rests into holes).
* **Something else**: two or more 5 ms blocks in a row whose residual, after the source at
  the room's level is taken out, is more than 0.7 of the source's level (a concealed packet,
  a jump), and which differ as much from every other room that sounds there (a room playing
  alone is judged by its silences only: see below). A clean block of Opus at 128 kb/s leaves a few percent against the source,
  but up to half in noisy transients (a hi-hat, a block or three) and quiet, noisy passages
  of the demo song, which the other rooms, playing the same decoded stream, share; alone,
  a noisy transient can differ from the source for 20 ms.

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
SILENCE = 0.001      # the shortest run of silence counted (beyond the edges below)
EDGE = 72            # samples (1.5 ms) at either end of a silence where the source is not looked at
MISMATCH = 0.7       # a residual over this fraction of the source's level is not the source
RUN = 2              # ... in this many blocks in a row (Opus's noisy transients leave up to half, a block or three)


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


def apart(s, peer, k, b, slip=2):
    """How far block `s` is from another room's (`peer[k:k + b]`, aligned over the window):
    the residual's level at the best of a few samples' slip (a player that corrects its
    timing by dropping or repeating a sample, as snapclient does, slips within a window)."""
    best = float("inf")
    for d in range(-slip, slip + 1):
        if 0 <= k + d and k + d + b <= len(peer):
            best = min(best, float(np.sqrt(np.mean((s - peer[k + d:k + d + b]) ** 2))))
    return best


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
        tried = {p: aligned(seg, skewlib.looped(source, p - reach, w + 2 * reach, step), reach) for p in guesses}
        best = max(tried.values(), key=lambda a: a[1], default=None)
        if best is None:
            continue
        # Where no guess plays well (a hole, or a window of the music's near-silence, whose
        # few loud samples correlate best with a stretch a beat away), the window is where
        # its neighbours put it: the best of poor fits would judge the room's silence
        # against music the source does not have there.
        if best[1] <= 0.9 and predicted is not None:
            best = tried[round(predicted, 3)]
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
            # The source must sound inside the silence, not only at its edges: a window placed
            # a millisecond off puts a note's onset, or the end of one, into the music's own
            # silence before or after it.
            inner = slice(start + EDGE, end - EDGE)
            if end - start >= shortest + 2 * EDGE and float(np.sqrt(np.mean(ref[inner] ** 2))) >= LOUD and keep(j + start):
                bad.append((j + start, j + end, True))
        # Something else: blocks that match neither the source nor the other rooms.
        peers = []
        for other in others:
            reach = int(0.002 * rate)  # rooms play within microseconds of each other (Snapcast's: within a millisecond or two)
            lo, hi = j - reach, j + w + reach
            if lo >= 0 and hi <= len(other):
                peers.append(aligned(seg, other[lo:hi], reach)[0])
        run = []
        for i, k in enumerate(range(0, w - b + 1, b)):
            s = seg[k:k + b]
            expected = gain * float(np.sqrt(np.mean(ref[k:k + b] ** 2)))
            # Only beside another room that plays there: alone, a room's noisy transients
            # (Opus codes a hi-hat's noise by its energy, not its waveform) look like
            # something else for up to 20 ms.
            sounding = [p for p in peers if float(np.sqrt(np.mean(p[k:k + b] ** 2))) >= expected / 2]
            odd = (loud[i] and keep(j + k) and sounding
                   and float(np.sqrt(np.mean((s - gain * ref[k:k + b]) ** 2))) > MISMATCH * expected
                   and all(apart(s, p, k, b) > MISMATCH * expected for p in sounding))
            if odd:
                run.append(k)
            if run and (not odd or k + b > w - b):
                if len(run) >= RUN:
                    bad.append((j + run[0], j + run[-1] + b, False))
                run = []
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


def first_sound(x, rate, after=0):
    """The first frame from `after` on where room recording `x` sounds (a 5 ms block over
    the loudness threshold), or None."""
    b = int(BLOCK * rate)
    for k in range(max(0, after), len(x) - b, b):
        if float(np.sqrt(np.mean(x[k:k + b] ** 2))) >= LOUD:
            return k
    return None


def lag_of(x, source, rate, step, guess, start, stretch=6.0, search=3.0):
    """How far behind what was fed (`guess`) room recording `x` plays the source (frames),
    from `stretch` seconds of it from `start` on, among the `search` seconds before; None
    where the room does not play the source there."""
    n = int(stretch * rate)
    if start + n > len(x):
        n = len(x) - start
    if n < rate:
        return None
    seg = x[start:start + n]
    lo = guess(start) - search * rate
    ref = skewlib.looped(source, lo, n + int(search * rate / step), step)
    k, _ = skewlib._best(np.diff(seg, prepend=0.0), np.diff(ref, prepend=0.0))
    # The whitened peak finds it; the plain signals say whether it is the source (whitened,
    # a source read between its samples over seconds correlates poorly however right).
    found = ref[int(round(k)):int(round(k)) + n]
    norm = np.sqrt(np.dot(seg, seg) * np.dot(found, found))
    corr = float(np.dot(seg, found)) / norm if norm > 0 and len(found) == n else 0.0
    return guess(start) - (lo + k * step) if corr > 0.5 else None


def fit(x, source, rate, step, guess, lag, begin, end, samples=12):
    """How well room recording `x` plays the source `lag` frames behind `guess`: the median
    correlation of `samples` windows spread over [begin, end), each aligned within a few
    samples."""
    w = int(0.1 * rate)
    corrs = []
    for j in np.linspace(begin, max(begin, end - w - 1), samples).astype(int):
        if j + w > len(x) or np.sqrt(np.mean(x[j:j + w] ** 2)) < LOUD:
            continue
        reach = 6
        corrs.append(aligned(x[j:j + w], skewlib.looped(source, guess(j) - lag - reach, w + 2 * reach, step), reach)[1])
    return float(np.median(corrs)) if corrs else -1.0


def rooms(data, source, rate, step, guess, spans, settle=1.0):
    """Holes in every room of a recording (one room a channel), counted over each room's
    span: `spans[i]` = (first, last) recording frame of room i's measured span (None: to
    the end); a room is counted from `settle` seconds after its first sound in its span on
    (a room's own start is not a hole). Returns [count(...) per room], each with the room's
    first sound ("sound_at", seconds into the recording, or None)."""
    out = []
    channels = data.shape[1]
    begins, lags = [], []
    for i in range(channels):
        x = data[:, i]
        sound = first_sound(x, rate, spans[i][0])
        begins.append(None if sound is None else (sound, sound + int(settle * rate)))
        if sound is not None:
            lags.append(lag_of(x, source, rate, step, guess, sound + int(settle * rate)))
    lags = [lag for lag in lags if lag is not None]
    for i in range(channels):
        x = data[:, i]
        last = len(x) if spans[i][1] is None else spans[i][1]
        if begins[i] is None:
            out.append({"holes": 0, "seconds": 0.0, "silent": 0, "at": [], "sound_at": None})
            continue
        sound, begin = begins[i]
        others = [data[:, k] for k in range(channels) if k != i]
        result = judge(x, source, rate, step, guess, begin, last, lags, others)
        result["sound_at"] = sound / rate
        out.append(result)
    return out


def judge(x, source, rate, step, guess, begin, last, lags, others):
    """Holes in one room's recording `x` over frames [begin, last): `count`'s answer. `lags`
    are where long stretches of the rooms were found to play the source behind `guess`
    (`lag_of`), `others` the other rooms' recordings on `x`'s frames."""
    # Where the room plays the source: the lag a long stretch of some room's shows (music
    # that repeats beat for beat can match even six seconds of it a beat off), the one
    # that fits this room best over its span; then each window near there.
    lag = max(lags, key=lambda lag: fit(x, source, rate, step, guess, lag, begin, last), default=None)
    if lag is None:
        windows = skewlib.follow_source(x, source, rate, step, guess)
    else:
        near = 0.05
        windows = skewlib.follow_source(x, source, rate, step, lambda j: guess(j) - lag + near * rate, search=2 * near)
    if last - begin >= rate and not any(found is not None and begin <= j < last for j, found, _, _ in windows):
        # Not one window of the span plays the source: the whole span is one hole (windows are
        # placed by those that were found, so `count` would see none).
        return {"holes": 1, "seconds": (last - begin) / rate, "silent": 0, "at": [begin / rate]}
    return count(x, source, rate, step, windows, others=others, keep=lambda f: begin <= f < last)


def beside(x, y, rate, keep=lambda frame: True):
    """Holes in room recording `x` judged against another room `y` that plays the same
    audio (no source needed, for benchmarks whose commands move the source: bench/control):
    runs of 1 ms or more of digital silence in `x` where `y` sounds (over -40 dBFS across
    the run). Silence in both at once is the music's, or a command's. Returns what `count`
    does (its holes are all silent)."""
    shortest = int(SILENCE * rate)
    quiet = np.abs(x) <= QUIET
    edges = np.flatnonzero(np.diff(np.concatenate(([0], quiet.astype(np.int8), [0]))))
    stretches = []
    for start, end in zip(edges[::2], edges[1::2]):
        if end - start >= shortest and keep(start) and float(np.sqrt(np.mean(y[start:end] ** 2))) >= LOUD:
            stretches.append((start, end))
    return {"holes": len(stretches), "seconds": sum(e - s for s, e in stretches) / rate, "silent": len(stretches),
            "at": [s / rate for s, _ in stretches]}
