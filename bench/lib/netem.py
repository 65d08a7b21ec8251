#!/usr/bin/env python3
"""A house network in network namespaces, with delay, jitter and loss made in user space.

The kernel here has no netem, so this builds its own: a star of namespaces joined by one
relay. The hub namespace (the coordinator's) and every room namespace get a TUN device
on 10.77.0.0/24 (hub 10.77.0.1, room k 10.77.0.(k+1)); the relay reads each IP packet a
namespace sends and writes it into the namespace it is addressed to (multicast into every
room) after the delay, jitter and loss of that room's link, in that direction. Everything
crosses it: the clock port, the unicast and multicast stream, retransmissions, Snapcast's
TCP. It is layer 3 and does not touch the packets.

Each link direction: delay + uniform(-jitter, +jitter) (netem's default distribution), each
packet independently (UDP may be reordered, as netem does); TCP segments keep their order
(a later one is never delivered before an earlier one, as a delaying TCP relay would), so
Snapcast sees jitter, not reordering. Loss is Bernoulli per packet, or bursts ("holes":
every packet dropped for `hole_ms` every `hole_every_ms`), or an outage (the link down in both
directions until it is brought up again). A stall is Wi-Fi's power save, retries or a scan:
the room's link holds every packet, both ways, for `stall_ms` (a random length between its two
values) about every `stall_every_ms` (a random gap between half and one and a half times it),
then lets them all go at once; nothing is lost.

    netem.py --name NAME --rooms 2 --control FIFO [--delay-ms 5 --jitter-ms 2 --loss 0.02]

creates namespaces NAME-hub, NAME-r1, NAME-r2 ..., prints "ready" when they are up, relays
until SIGTERM or SIGINT, then deletes them. Commands on the FIFO, one JSON object a line:
  {"room": 1, "delay_ms": 20, "jitter_ms": 10, "loss": 0.1}   change a room's link (both directions)
  {"room": 1, "down": true} / {"room": 1, "down": false}        an outage, and its end
  {"room": 1, "stall_ms": [150, 300], "stall_every_ms": 4000}  stalls ("stall_ms": 0: none;
                                                   "stall_regular": true: exactly every stall_every_ms)
  {"room": 0, ...}                                             every room
  {"stats": "PATH"}                                            write the counters to PATH (JSON)
"""
import argparse
import fcntl
import gc
import heapq
import json
import os
import random
import select
import signal
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
SUBNET = "10.77.0"


def now():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def sh(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


class Stalls:
    """A room's stalls, both directions of its link at once: when each begins and ends."""

    def __init__(self, rng, shortest, longest, every, spread=0.5):
        self.rng, self.shortest, self.longest, self.every, self.spread = rng, shortest, longest, every, spread
        self.start, self.end, self.count = 0.0, 0.0, 0
        self.plan(now())

    def plan(self, after):
        self.start = after + self.rng.uniform(1 - self.spread, 1 + self.spread) * self.every
        self.end = self.start + self.rng.uniform(self.shortest, self.longest)

    def release(self, t):
        """When a packet that reached the link at `t` may go on: then, or when its stall ends."""
        while t >= self.end:
            self.count += 1
            self.plan(self.end)
        return self.end if t >= self.start else t


class Link:
    """One direction of one room's link."""

    def __init__(self, rng):
        self.rng = rng
        self.delay = 0.0
        self.jitter = 0.0
        self.loss = 0.0
        self.hole = 0.0
        self.hole_every = 0.0
        self.hole_phase = 0.0
        self.down = False
        self.stalls = None  # shared with the other direction
        self.last_tcp = 0.0
        self.sent = 0
        self.dropped = 0

    def configure(self, c):
        if "delay_ms" in c:
            self.delay = c["delay_ms"] / 1000
        if "jitter_ms" in c:
            self.jitter = c["jitter_ms"] / 1000
        if "loss" in c:
            self.loss = c["loss"]
        if "hole_ms" in c:
            self.hole = c["hole_ms"] / 1000
            self.hole_every = c.get("hole_every_ms", 5000) / 1000
            self.hole_phase = now() + self.rng.uniform(0, self.hole_every)
        if "down" in c:
            self.down = bool(c["down"])

    def when(self, packet, t):
        """When to deliver `packet` arriving at `t`, or None to drop it."""
        if self.down:
            self.dropped += 1
            return None
        if self.hole > 0 and (t - self.hole_phase) % self.hole_every < self.hole:
            self.dropped += 1
            return None
        if self.loss > 0 and self.rng.random() < self.loss:
            self.dropped += 1
            return None
        self.sent += 1
        if self.stalls is not None:
            t = self.stalls.release(t)
        at = t + max(0.0, self.delay + (self.rng.uniform(-self.jitter, self.jitter) if self.jitter else 0.0))
        if len(packet) > 9 and packet[0] >> 4 == 4 and packet[9] == 6:  # TCP: keep its order
            at = max(at, self.last_tcp)
            self.last_tcp = at
        return at


class House:
    def __init__(self, name, rooms, seed):
        self.name = name
        self.rooms = rooms
        self.hub_ns = f"{name}-hub"
        self.room_ns = [f"{name}-r{k}" for k in range(1, rooms + 1)]
        self.fds = {}
        rng = random.Random(seed)
        # links[k] = (hub -> room k, room k -> hub)
        self.links = {k: (Link(random.Random(rng.random())), Link(random.Random(rng.random()))) for k in range(1, rooms + 1)}

    def up(self):
        tag = f"{os.getpid() % 100000}"
        for k, ns in [(0, self.hub_ns)] + list(enumerate(self.room_ns, 1)):
            sh("ip", "netns", "add", ns)
            dev = f"tn{tag}x{k}"
            fd = open_tun(dev)
            self.fds[k] = fd
            sh("ip", "link", "set", dev, "netns", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "addr", "add", f"{SUBNET}.{k + 1}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up", "mtu", "1500")
            sh("ip", "-n", ns, "route", "add", "224.0.0.0/4", "dev", dev)

    def down(self):
        for ns in [self.hub_ns] + self.room_ns:
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass

    def configure(self, c):
        room = int(c.get("room", 0))
        for k, (out, back) in self.links.items():
            if room in (0, k):
                out.configure(c)
                back.configure(c)
                if "stall_ms" in c:
                    span = c["stall_ms"] if isinstance(c["stall_ms"], list) else [c["stall_ms"]] * 2
                    stalls = Stalls(random.Random(out.rng.random()), span[0] / 1000, span[1] / 1000,
                                    c.get("stall_every_ms", 4000) / 1000, 0.0 if c.get("stall_regular") else 0.5) if span[1] > 0 else None
                    out.stalls = back.stalls = stalls

    def stats(self):
        return {str(k): {"to_room": {"sent": a.sent, "dropped": a.dropped}, "to_hub": {"sent": b.sent, "dropped": b.dropped},
                         "stalls": a.stalls.count if a.stalls else 0}
                for k, (a, b) in self.links.items()}

    def targets(self, source, packet):
        """(room index or 0 for the hub, link) pairs a packet from `source` goes to."""
        if len(packet) < 20 or packet[0] >> 4 != 4:
            return []
        dst = packet[16:20]
        if source != 0:
            # Another room's host (a stranger next door, in the tests): through both links.
            k = dst[3] - 1
            if dst[:3] == bytes([10, 77, 0]) and k != source and k in self.links:
                return [(k, self.links[k][0])]
            return [(0, self.links[source][1])] if dst[0] >= 224 or dst[:3] == bytes([10, 77, 0]) else []
        if dst[0] >= 224:
            return [(k, links[0]) for k, links in self.links.items()]
        k = dst[3] - 1
        return [(k, self.links[k][0])] if dst[:3] == bytes([10, 77, 0]) and k in self.links else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--rooms", type=int, default=2)
    ap.add_argument("--control", help="a FIFO to read commands from (created)")
    ap.add_argument("--delay-ms", type=float, default=0)
    ap.add_argument("--jitter-ms", type=float, default=0)
    ap.add_argument("--loss", type=float, default=0)
    ap.add_argument("--seed", type=int, default=1)
    opts = ap.parse_args()

    house = House(opts.name, opts.rooms, opts.seed)
    try:  # a precise relay: its own wake-ups would otherwise be part of every path's jitter
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
    except (PermissionError, OSError, AttributeError):
        pass
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    control = None
    try:
        house.up()
        house.configure({"room": 0, "delay_ms": opts.delay_ms, "jitter_ms": opts.jitter_ms, "loss": opts.loss})
        if opts.control:
            if not os.path.exists(opts.control):
                os.mkfifo(opts.control)
            control = os.open(opts.control, os.O_RDWR | os.O_NONBLOCK)  # RDWR: never sees EOF
        # The relay's own pauses are part of every path's delay; a collector pass over the
        # pending heap would be one. Nothing here makes reference cycles.
        gc.disable()
        print("ready", flush=True)
        by_fd = {fd: k for k, fd in house.fds.items()}
        pending = []  # (deliver at, order, target fd, packet)
        order = 0
        partial = b""
        while not stopping:
            timeout = max(0.0, pending[0][0] - now()) if pending else 0.2
            readable = list(by_fd) + ([control] if control is not None else [])
            try:
                ready, _, _ = select.select(readable, [], [], min(timeout, 0.2))
            except InterruptedError:
                continue
            for fd in ready:
                if fd == control:
                    partial += os.read(control, 65536)
                    *lines, partial = partial.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        c = json.loads(line)
                        if "stats" in c:
                            with open(c["stats"] + ".tmp", "w") as f:
                                json.dump(house.stats(), f)
                            os.rename(c["stats"] + ".tmp", c["stats"])
                        else:
                            house.configure(c)
                    continue
                source = by_fd[fd]
                while True:
                    try:
                        packet = os.read(fd, 65536)
                    except BlockingIOError:
                        break
                    # Each packet's delay counts from when it was read: a packet that came in
                    # while others were being handled must not be dated back to the wake-up
                    # (that would deliver it early, below the link's floor).
                    arrived = now()
                    for k, link in house.targets(source, packet):
                        at = link.when(packet, arrived)
                        if at is not None:
                            heapq.heappush(pending, (at, order, house.fds[k], packet))
                            order += 1
            t = now()
            while pending and pending[0][0] <= t:
                _, _, fd, packet = heapq.heappop(pending)
                try:
                    os.write(fd, packet)
                except OSError:
                    pass
    finally:
        house.down()
        if control is not None:
            os.close(control)


if __name__ == "__main__":
    sys.exit(main())
