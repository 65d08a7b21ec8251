"""What several benchmarks share about a tutti house: its control API, and test tracks."""
import json
import subprocess
import os
import urllib.request

import numpy as np

from rig import now


def make_noise(work, name, seconds, tutti):
    """A pink-noise MP3 (192 kbit/s; nothing in it repeats) and its decoded mono audio."""
    wav, mp3 = os.path.join(work, name + ".wav"), os.path.join(work, name + ".mp3")
    subprocess.run(["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", wav, "synth", str(seconds), "pinknoise", "gain", "-10"], check=True)
    subprocess.run(["lame", "--quiet", "-b", "192", "--tt", name, wav, mp3], check=True)
    pcm = subprocess.run([tutti, "decode", mp3], capture_output=True, check=True).stdout
    return mp3, np.frombuffer(pcm, dtype="<i2").astype(np.float64).reshape(-1, 2).mean(axis=1) / 32768.0


class API:
    """The coordinator's control API, with the house token."""

    def __init__(self, port, token):
        self.base = f"http://127.0.0.1:{port}/api/v1"
        self.token = token

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else (b"" if method != "GET" else None)
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read() or b"null")

    def command(self, path, body=None):
        """Sends a command; returns (monotonic time it was sent, the answer)."""
        sent = now()
        return sent, self.call("POST", path, body)
