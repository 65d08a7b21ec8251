#!/usr/bin/env python3
"""A stranger on the house network: it knows tutti's protocol (docs/protocol.md) but not the
house key. It sends the coordinator and a follower's host everything it can forge, and
prints one JSON line of what it sent and what came back.

    stranger.py --coordinator 10.77.0.1:17015 --follower 10.77.0.2 [--ports 5004,40000]
                [--rtp-port 5004 --ssrc 123456]

Forged (signed with a key of its own): time requests, subscriptions (a long lease, and a
lease of 0 to cancel a follower's), room reports (a thousand rooms, and a 513-bracket body),
and, to the follower's ports (or every UDP port of its host), epoch ends and muting room settings
dated now (with --member-key: signed with a member's own credential, as that member and as
others, to the follower alone), enrolments and requests for the stream's key, as member 0 (a holder of the house
key) and as members 1 and 2. Unsigned: messages of the older protocol version and random bytes. With --rtp-port
and --ssrc (what anyone who overhears the stream reads in its clear headers): RTP packets of
that SSRC due 100 ms from now, as plain RTP and as SRTP sealed with a key of its own.
"""
import argparse
import hashlib
import hmac
import json
import os
import socket
import struct
import time

MAGIC = b"TUTC"
VERSION = 3


def seal(kind, body, stamp, key, member=0, sequence=0):
    head = MAGIC + bytes([VERSION, kind]) + struct.pack(">HQQ", member, stamp, sequence)
    return head + body + hmac.new(key, head + body, hashlib.sha256).digest()[:16]


def hkdf(secret, salt, info, length=32):
    prk = hmac.new(salt, secret, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def member_clock_key(secret):
    """A member's clock-port key, as tutti derives it from its credential (HKDF-SHA256)."""
    return hkdf(secret, b"tutti member", b"tutti member clock v1")


def ntp_now():
    t = time.clock_gettime(time.CLOCK_MONOTONIC)  # the rig's hosts share this clock
    return (int(t) << 32) | int((t % 1) * (1 << 32))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--coordinator", required=True)
    ap.add_argument("--follower", required=True, help="the follower host's address")
    ap.add_argument("--ports", default="", help="the follower's UDP ports (comma-separated; default: every port)")
    ap.add_argument("--rtp-port", type=int, help="the follower's stream port")
    ap.add_argument("--ssrc", type=int, help="the stream's SSRC")
    ap.add_argument("--member-key", help="a member's credential file (tutti member ID HEX): sign as that member, "
                    "to the follower only (a member posing as the coordinator to another member)")
    opts = ap.parse_args()
    host, port = opts.coordinator.rsplit(":", 1)
    coordinator = (host, int(port))
    key = os.urandom(32)
    members = [0]
    if opts.member_key:
        words = open(opts.member_key).read().split()
        members = [int(words[2]), 0, 1, 2]
        key = member_clock_key(bytes.fromhex(words[3]))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    sent = {"bytes": 0, "datagrams": 0}

    def send(data, to):
        try:
            s.sendto(data, to)
            sent["bytes"] += len(data)
            sent["datagrams"] += 1
        except OSError:
            pass

    # To the coordinator: time requests, subscriptions, room reports.
    for i in range(0 if opts.member_key else 200):
        send(seal(1, struct.pack(">Q", i) + bytes(24), 0, key, member=i % 3), coordinator)
        # Enrolment (a member of its own), and the stream's key, as member 0 and as member 1.
        send(seal(9, struct.pack(">QB", i, 8) + b"stranger" + bytes(64), 0, key), coordinator)
        send(seal(11, struct.pack(">I", 0xFFFFFFFF) + bytes(57), 0, key, member=1, sequence=i + 1), coordinator)
        send(seal(3, struct.pack(">HH", 5004, 65535) + bytes(4), 0, key), coordinator)
        send(seal(3, struct.pack(">HH", 0, 0) + bytes(4), 0, key), coordinator)
    for i in range(0 if opts.member_key else 1000):
        report = json.dumps({"name": f"stranger {i}", "state": "playing", "interrupted": False,
                             "clockOffsetMicroseconds": 0, "clockUncertaintyMicroseconds": 0, "roundTripMicroseconds": 0,
                             "bufferedPackets": 0, "outputLatencyMilliseconds": 1e300, "packetsReceived": 0, "packetsLost": 0,
                             "packetsRecovered": 0, "framesConcealed": 0, "packetsLate": 0, "timingErrorMicroseconds": 0,
                             "settingsVersion": 0, "outputDelayMilliseconds": 0}).encode()
        send(seal(5, report, 0, key), coordinator)
    if not opts.member_key:
        send(seal(5, b"[" * 513, 0, key), coordinator)
        # The older protocol, unsigned: what a stranger could send before.
        send(MAGIC + bytes([1, 5, 0, 0]) + b"[" * 513, coordinator)
        send(MAGIC + bytes([1, 3, 0, 0]) + struct.pack(">HH", 5004, 65535), coordinator)
        for i in range(300):
            send(os.urandom(1 + i % 1200), coordinator)

    # To the follower's UDP ports (as one that watched the traffic would know them; else every
    # port): epoch ends dated now (silence) and settings that mute, a few times over 2 s.
    ports = [int(p) for p in opts.ports.split(",") if p] or list(range(1, 65536))
    for round in range(20):
        member = members[round % len(members)]
        for epoch in range(4):
            end = seal(7, struct.pack(">IQ", epoch, ntp_now()), ntp_now(), key, member=member)
            for p in ports:
                send(end, (opts.follower, p))
        mute = seal(6, struct.pack(">IHBBI", 0xFFFF + round, 0, 1, 0, 0), ntp_now(), key, member=member)
        for p in ports:
            send(mute, (opts.follower, p))
        time.sleep(0.1)

    # To the follower's stream port: packets of the stream's SSRC, due 100 ms from now, at
    # every sequence number near any guess (an Opus frame that is all silence: code 0, CELT).
    if opts.rtp_port and opts.ssrc is not None:
        for i in range(600):
            sequence = (i * 109) & 0xFFFF
            extension = (bytes([0x17]) + struct.pack(">Q", ntp_now() + (1 << 32) // 10)
                         + bytes([0x23]) + struct.pack(">I", i % 8)
                         + bytes([0x37]) + struct.pack(">Q", ntp_now()) + bytes([0x43]) + struct.pack(">I", 0))
            extension += bytes(-len(extension) % 4)
            header = (bytes([0x90, 96]) + struct.pack(">HII", sequence, (i * 960) & 0xFFFFFFFF, opts.ssrc)
                      + b"\xbe\xde" + struct.pack(">H", len(extension) // 4) + extension)
            payload = bytes([0xFC]) + bytes(40)
            send(header + payload, (opts.follower, opts.rtp_port))
            send(header + payload + os.urandom(16), (opts.follower, opts.rtp_port))  # as if sealed
            if i % 50 == 49:
                time.sleep(0.05)

    # What came back: the coordinator answers a stranger's time request only with "not paired".
    s.settimeout(0.5)
    received = {"bytes": 0, "datagrams": 0, "not_paired": 0, "other": 0}
    deadline = time.time() + 2
    while time.time() < deadline:
        try:
            data, _ = s.recvfrom(65536)
        except (socket.timeout, OSError):
            continue
        received["bytes"] += len(data)
        received["datagrams"] += 1
        if data[:4] == MAGIC and len(data) >= 6 and data[5] == 8:
            received["not_paired"] += 1
        else:
            received["other"] += 1
    print(json.dumps({"sent": sent, "received": received}), flush=True)


if __name__ == "__main__":
    main()
