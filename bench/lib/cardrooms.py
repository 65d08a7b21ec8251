"""Rooms on virtual sound cards (bench/vcard), for the benchmarks' `--device vcard`.

Every room plays into a card of its own, whose crystal runs the ppm it is given; the cards
record what they play with when they played it ($TUTTI_VCARD_DIR), and the rooms are
judged from those recordings alone (bench/lib/vcard.py): no recorder, no shared sink.

A room reaches its card in one of three ways, side by side in one run:
- straight to ALSA (`tutti-follower --output alsa:tutti_vcard:NAME,PPM`, `snapclient
  --player alsa -s tutti_vcard:NAME,PPM`);
- through the rig's PulseAudio server, which plays each card through a `module-alsa-sink`
  of its own (so a room's sink runs on its card's crystal, as on a machine with a DAC).
"""
import os
import re
import shutil
import subprocess

import vcard


def pi_alsa_config(work):
    """An ALSA configuration as a Raspberry Pi OS Lite machine with a DAC has: alsa-lib's own,
    and in its conf.d only the card's (here the vcard's). This machine's conf.d also holds
    libasound2-plugins' files, the rig's PulseAudio plugin among them, whose hook loads
    libpulse and what it needs (some 2 MB resident) into every program that opens an ALSA
    device, tutti's followers and snapclient alike: on a Pi no such hook runs. Returns the
    path for ALSA_CONFIG_PATH."""
    folder = os.path.join(work, "alsa")
    confd = os.path.join(folder, "conf.d")
    os.makedirs(confd, exist_ok=True)
    shutil.copy("/etc/alsa/conf.d/60-tutti-vcard.conf", confd)
    with open("/usr/share/alsa/alsa.conf") as f:
        text = f.read()
    if '"/etc/alsa/conf.d"' not in text:
        raise RuntimeError("alsa-lib's alsa.conf no longer loads /etc/alsa/conf.d: bench/lib/cardrooms.py must change")
    path = os.path.join(folder, "alsa.conf")
    with open(path, "w") as f:
        f.write(text.replace('"/etc/alsa/conf.d"', f'"{confd}"'))
    return path


def device(card, ppm):
    """The ALSA device string of card `card` whose crystal runs `ppm` fast."""
    ppm = int(ppm) if float(ppm).is_integer() else ppm
    return f"tutti_vcard:{card},{ppm}"


class Cards:
    """The cards of a benchmark run: a folder for their recordings, fresh names for each
    measurement, and the PulseAudio sinks loaded on them. Set up before the rig (its
    processes inherit TUTTI_VCARD_DIR)."""

    def __init__(self, work):
        self.dir = os.path.join(work, "cards")
        os.makedirs(self.dir, exist_ok=True)
        os.environ["TUTTI_VCARD_DIR"] = self.dir
        os.environ["ALSA_CONFIG_PATH"] = pi_alsa_config(work)
        self.modules = []

    def names(self, label, rooms=("A", "B")):
        """Card names not used yet in this run, one per room: `label` (letters and digits
        only: ALSA's argument syntax) with a take number."""
        slug = re.sub(r"[^A-Za-z0-9]", "", label)
        take = 1
        while any(os.path.exists(os.path.join(self.dir, f"{slug}{take}{room}.json")) for room in rooms):
            take += 1
        return [f"{slug}{take}{room}" for room in rooms]

    def pulse_sink(self, rig, card, ppm):
        """A sink of the rig's PulseAudio server that plays card `card` (module-alsa-sink:
        the server's timer-based scheduling on the card's reports, as on a Pi with a DAC).
        Returns the sink's name; `close` unloads it (and the card writes its recording)."""
        sink = f"card{card}"
        # Inside a VM (this machine) PulseAudio turns its timer-based scheduling off and runs
        # the sink on the card's period interrupts, by default 4 × 25 ms: a sink that holds
        # 100 ms, which with a room's own buffer leaves live audio no room within a 150 ms
        # house latency (the room stops and starts again over and over: noted in
        # docs/timing.md). On a Pi the timer-based sink holds what its clients ask for;
        # 4 × 10 ms stands in for that here.
        out = subprocess.run(["pactl", "load-module", "module-alsa-sink", f"device={device(card, ppm)}", f"sink_name={sink}",
                              "rate=48000", "channels=2", "format=s16le", "fragments=4", "fragment_size=1920"],
                             env=rig.env, capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            raise RuntimeError(f"PulseAudio cannot play card {card}: {out.stderr.strip()}")
        self.modules.append((rig, out.stdout.strip()))
        return sink

    def close(self):
        """Unloads the sinks `pulse_sink` loaded (each card then closes and writes its JSON)."""
        for rig, module in self.modules:
            subprocess.run(["pactl", "unload-module", module], env=rig.env, capture_output=True, timeout=10)
        self.modules = []

    def load(self, card):
        return vcard.Card(os.path.join(self.dir, card))
