"""The benchmarks' measuring rig (docs/timing.md): a private PulseAudio server with a null
sink `capture` and remap sinks roomA (left) and roomB (right), one recorder on
capture.monitor whose chunks are timestamped on arrival, and a real-time PCM feeder."""
import os
import signal
import subprocess
import threading
import time

import numpy as np

import skew as skewlib

RATE = 48000
# The rig's sinks' rate: the followers' own, 48 kHz. `TUTTI_BENCH_SINK_RATE=50000` for a trial of
# a null sink that rounds nothing (docs/timing.md, "Joining mid-song"); the followers' streams are
# then resampled.
SINK_RATE = int(os.environ.get("TUTTI_BENCH_SINK_RATE", "48000"))
FRAME_BYTES = 4


def now():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def scaled_clock(work):
    """bench/lib/scaledclock.c built into `work` (once): LD_PRELOAD it with SCALED_CLOCK_PPM
    for a process whose monotonic clock runs fast or slow."""
    path = os.path.join(work, "scaledclock.so")
    if not os.path.exists(path):
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", path, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                                "scaledclock.c"), "-ldl"], check=True)
    return path


class Rig:
    """The private PulseAudio server and every process the benchmark starts."""

    def forget_clocks(self):
        """Followers started after this are new ones: none resumes the clock an earlier
        follower of the run kept in the state folder (a restart in a scenario still does)."""
        for name in os.listdir(self.state):
            if name.startswith("clock-"):
                os.remove(os.path.join(self.state, name))

    def __init__(self, work):
        self.work = work
        self.procs = []
        runtime = os.path.join(work, "pulse")
        os.makedirs(runtime, exist_ok=True)
        self.env = dict(os.environ, XDG_RUNTIME_DIR=runtime, HOME=runtime, PULSE_SERVER=f"unix:{runtime}/native")
        # The house's state and key: every tutti process of the run is a member of one house.
        state = os.path.join(work, "state")
        os.makedirs(state, mode=0o700, exist_ok=True)
        self.state = state
        self.env["TUTTI_STATE_DIR"] = state
        key = os.path.join(state, "house.key")
        if not os.path.exists(key):
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, (os.urandom(32).hex() + "\n").encode())
            os.close(fd)
        self.runtime = runtime
        self.pulse, self.pulse_ppm = None, 0
        self.sound_server()

    def sound_server(self, ppm=0):
        """(Re)starts the private PulseAudio server unless it already runs at `ppm`: with a
        rate, on a monotonic clock that runs that much fast (scaled_clock): its null sink, the
        rooms' sound card, then plays that much fast against the host, while its wall-clock
        stamps keep the host's rate (a DAC crystal off the CPU's)."""
        if self.pulse is not None and self.pulse_ppm == ppm:
            return
        if self.pulse is not None:
            self.stop(self.pulse)
            self.procs.remove(self.pulse)
        runtime = self.runtime
        socket = f"{runtime}/native"
        if os.path.exists(socket):
            os.unlink(socket)
        env = dict(self.env)
        if ppm:
            self.env.update(LD_PRELOAD=scaled_clock(self.work), SCALED_CLOCK_PPM=str(ppm))
        self.pulse = self.start("pulseaudio", [
            "pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--disallow-exit",
            # TUTTI_BENCH_PULSE_LOG=debug: the server's own account (its rewinds, its streams' buffers) in pulseaudio.log
            f"--log-level={os.environ.get('TUTTI_BENCH_PULSE_LOG', 'notice')}", "--log-time=yes",
            # TUTTI_BENCH_RESAMPLE: the server's resampler, for trials of a sink off 48 kHz (its default otherwise)
            f"--resample-method={os.environ.get('TUTTI_BENCH_RESAMPLE', 'speex-float-1')}",
            "-L", f"module-native-protocol-unix socket={socket} auth-anonymous=1",
            "-L", f"module-null-sink sink_name=capture rate={SINK_RATE} channels=2 channel_map=front-left,front-right",
            "-L", f"module-remap-sink sink_name=roomA master=capture rate={SINK_RATE} channels=1 master_channel_map=front-left channel_map=mono remix=no",
            "-L", f"module-remap-sink sink_name=roomB master=capture rate={SINK_RATE} channels=1 master_channel_map=front-right channel_map=mono remix=no",
        ])
        self.env = env
        self.pulse_ppm = ppm
        deadline = now() + 10
        while not os.path.exists(socket) and now() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)

    def start(self, name, args, stdin=None, stdout=None):
        log = open(os.path.join(self.work, name + ".log"), "w")
        p = subprocess.Popen(args, env=self.env, stdin=stdin, stdout=stdout or log, stderr=log)
        p.bench_name = name
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM):
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def close(self):
        for p in reversed(self.procs):
            self.stop(p)


class Recorder:
    """parec on capture.monitor, raw to a pipe; every chunk timestamped on arrival."""

    def __init__(self, rig, latency_ms=10):
        self.proc = rig.start("recorder", ["parec", "-d", "capture.monitor", "--raw", "--rate=48000", "--channels=2",
                                           "--format=s16le", f"--latency-msec={latency_ms}"], stdout=subprocess.PIPE)
        self.chunks = []  # (arrival time, bytes)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        fd = self.proc.stdout.fileno()
        while True:
            data = os.read(fd, 4096)
            if not data:
                return
            self.chunks.append((now(), data))

    def stop(self, rig):
        rig.stop(self.proc)
        self.thread.join(5)
        return self.snapshot()

    def snapshot(self):
        """What has been recorded so far (frames × 2 channels), its clock fitted anew."""
        chunks = list(self.chunks)
        raw = b"".join(c for _, c in chunks)
        raw = raw[: len(raw) - len(raw) % FRAME_BYTES]
        data = np.frombuffer(raw, dtype="<i2").astype(np.float64).reshape(-1, 2) / 32768.0
        # Capture time of each chunk's last frame = its arrival; fit a line through them.
        ends, total = [], 0
        for t, c in chunks:
            total += len(c) // FRAME_BYTES
            ends.append((total, t))
        frames = np.array([e[0] for e in ends], dtype=np.float64)
        times = np.array([e[1] for e in ends])
        # The earliest arrivals bound capture time from above: fit a line to the lower
        # envelope (the earliest arrival of every two seconds), since the null sink's clock
        # runs tens of ppm off this host's.
        residual = times - frames / RATE
        bins = (frames // (2 * RATE)).astype(int)
        xs, ys = [], []
        for b in np.unique(bins):
            i = np.flatnonzero(bins == b)
            k = i[np.argmin(residual[i])]
            xs.append(frames[k])
            ys.append(residual[k])
        if len(xs) >= 3:
            self.slope, intercept = np.polyfit(np.array(xs) / RATE, np.array(ys), 1)
            self.t0 = intercept + min(0.0, float(np.min(np.array(ys) - (intercept + self.slope * np.array(xs) / RATE))))
        else:
            self.slope, self.t0 = 0.0, float(np.min(residual))
        return data

    def time(self, frame):
        """The monotonic time (s) recording frame `frame` was captured."""
        return self.t0 + frame / RATE * (1 + self.slope)

    def frame(self, t):
        """The recording frame captured at monotonic time `t` (s)."""
        return (t - self.t0) * RATE / (1 + self.slope)

    @property
    def step(self):
        """Source frames per recording frame: the null sink's clock runs off this host's (by
        hundreds of ppm with small blocks), and the players follow it, so a source played on
        time is stretched by this much in the recording."""
        return 1 + self.slope


def stretched(signal, start, count, step):
    """`count` values of `signal` from (fractional) frame `start` on, every `step` frames."""
    first = max(0, int(np.floor(start)))
    last = min(len(signal), int(np.ceil(start + count * step)) + 2)
    return np.interp(start + np.arange(count) * step, np.arange(first, last), signal[first:last])


class Feeder:
    """Writes PCM into a pipe at real-time pace (10 ms chunks), looping the source, from a
    process of its own: a thread of the benchmark's shared the interpreter with the recorder's
    and the analysis, and a stall of it ran the player's input dry, which both rooms played
    as silence (bench/NOTES.md, "Holes"). `start` is the monotonic time its first chunk was
    due; `paused` stops and resumes the flow (a paused source)."""

    def __init__(self, pcm, target):
        import multiprocessing
        context = multiprocessing.get_context("fork")
        self._start = context.Value("d", 0.0)
        self._paused = context.Value("b", 0)
        self.process = context.Process(target=Feeder._run, args=(pcm, target, self._start, self._paused), daemon=True)
        self.process.start()

    @staticmethod
    def _waiting(fd):
        """Bytes written into the pipe and not yet read (FIONREAD works on its writing end too)."""
        import fcntl, struct, termios
        try:
            return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        except OSError:
            return 0

    @staticmethod
    def _run(pcm, target, start_value, paused):
        try:
            os.nice(-5)  # ahead of the benchmark's own threads, behind the players
        except OSError:
            pass
        chunk = RATE // 100 * FRAME_BYTES
        fd = target() if callable(target) else target
        # As a writer that paces itself starts when someone listens: the first chunk, then
        # its pace from when the player took it. (Paced from the start, it filled the pipe
        # while the player was starting, and a writer whose pipe is full is one that runs
        # ahead: the player sent it seconds ahead, as a file, and the scenarios of a live
        # input measured stored audio: bench/NOTES.md.)
        first = pcm[:chunk]
        try:
            os.write(fd, first)
        except (BrokenPipeError, OSError):
            return
        deadline = now() + 30
        while now() < deadline and Feeder._waiting(fd) > 0:
            time.sleep(0.002)
        start = now() - 0.01
        start_value.value = start
        pos, k = chunk, 1
        while True:
            due = start + k * 0.01
            wait = due - now()
            if wait > 0:
                time.sleep(wait)
            k += 1
            if paused.value:  # the source is paused: nothing flows into the pipe
                continue
            piece = pcm[pos: pos + chunk]
            if len(piece) < chunk:
                piece += pcm[: chunk - len(piece)]
            try:
                os.write(fd, piece)
            except (BrokenPipeError, OSError):
                return
            pos = (pos + chunk) % len(pcm)

    @property
    def start(self):
        deadline = now() + 10
        while self._start.value == 0.0 and now() < deadline:
            time.sleep(0.005)
        return self._start.value

    @property
    def paused(self):
        return bool(self._paused.value)

    @paused.setter
    def paused(self, value):
        self._paused.value = 1 if value else 0

    def stop(self):
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(2)


def proc_stats(pid):
    """CPU seconds and peak resident memory (MB) of a process."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        hwm = 0
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
        return cpu, hwm
    except OSError:
        return float("nan"), float("nan")


def per_thread(pid, name, read, width):
    """Sums `read(text)` (a tuple of `width` numbers) over the file `name` of each of a
    process's threads; a thread that ends meanwhile drops out. NaNs when the process is gone."""
    totals = [0] * width
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return (float("nan"),) * width
    for task in tasks:
        try:
            values = read(open(f"/proc/{pid}/task/{task}/{name}").read())
        except (OSError, ValueError, IndexError, KeyError):
            continue
        totals = [t + v for t, v in zip(totals, values)]
    return tuple(totals)


def cpu_ns(pid):
    """CPU time (ns) of all a process's threads so far, from their schedstat: exact, where
    /proc's stat counts clock ticks (10 ms)."""
    return per_thread(pid, "schedstat", lambda text: (int(text.split()[0]),), 1)[0]


def context_switches(pid):
    """Voluntary and involuntary context switches of all a process's threads so far: the
    voluntary ones are its wake-ups (each time a thread slept and was woken)."""
    def read(text):
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        return int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"])
    return per_thread(pid, "status", read, 2)


def validate_rig(rig):
    """Plays noise whose right channel trails the left by 12.5 samples (260.4 µs, a band-limited
    delay between samples, where a coarse peak finder errs most); returns the known offset, the
    median measured and the 95th percentile of the windows' errors (µs)."""
    rng = np.random.default_rng(7)
    noise = rng.standard_normal(RATE * 4)
    # Music-like: rolled off above 4 kHz (white noise half a sample apart hardly correlates
    # sample by sample, and the peak finder would reject every window).
    f = np.fft.rfftfreq(len(noise), 1 / RATE)
    spectrum = np.fft.rfft(noise) / np.sqrt(1 + (f / 4000) ** 4)
    known = 12.5 / RATE * 1e6
    left = np.fft.irfft(spectrum, len(noise))
    right = np.fft.irfft(spectrum * np.exp(-2j * np.pi * f * known * 1e-6), len(noise))
    stereo = np.stack([left, right], axis=1) * (0.2 / np.std(left))
    pcm = (np.clip(stereo, -1, 1) * 32767).astype("<i2").tobytes()
    recorder = Recorder(rig)
    time.sleep(0.3)
    player = rig.start("validate", ["pacat", "--raw", "-d", "capture", "--rate=48000", "--channels=2", "--format=s16le"],
                       stdin=subprocess.PIPE)
    player.stdin.write(pcm)
    player.stdin.close()
    player.wait(15)
    time.sleep(0.3)
    data = recorder.stop(rig)
    s = np.array([x for _, x, _ in skewlib.skews(data[:, 0], data[:, 1], RATE)])
    measured = float(np.median(s)) if len(s) else float("nan")
    spread = float(np.percentile(np.abs(s - known), 95)) if len(s) else float("nan")
    print(f"rig validation: known offset {known:.1f} µs, measured {measured:.1f} µs (median of {len(s)} windows, "
          f"p95 window error {spread:.2f} µs)", flush=True)
    return {"known": known, "measured": measured, "p95_error": spread}


class Busy:
    """Both cores busy beside the players: `stress-ng --cpu N` (as many workers as cores) at
    the players' own priority, until stopped."""

    def __init__(self, rig, workers=2):
        self.rig = rig
        self.proc = rig.start("stress-ng", ["stress-ng", "--cpu", str(workers), "--cpu-method", "matrixprod", "--quiet"])

    def stop(self):
        self.rig.stop(self.proc)


class SecondStream:
    """Another application's stream on a room's sink (a notification sound): every `every`
    seconds a stream opens on `sink`, plays `length` seconds of silence at a low latency (so
    the sink's latency drops and PulseAudio rewinds, as a new stream does) and closes."""

    def __init__(self, rig, sink, every=2.0, length=0.5, latency_ms=5):
        self.rig, self.sink, self.every, self.length, self.latency_ms = rig, sink, every, length, latency_ms
        self.stopped = threading.Event()
        self.opened = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        silence = bytes(int(self.length * RATE) * FRAME_BYTES)
        while not self.stopped.wait(self.every):
            p = subprocess.Popen(["pacat", "--raw", "-d", self.sink, "--rate=48000", "--channels=2", "--format=s16le",
                                  f"--latency-msec={self.latency_ms}", "--client-name=notification"],
                                 env=self.rig.env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                p.stdin.write(silence)
                p.stdin.close()
                p.wait(self.every + 5)
                self.opened += 1
            except (OSError, subprocess.TimeoutExpired):
                p.kill()
                p.wait()

    def stop(self):
        self.stopped.set()
        self.thread.join(10)
