#!/usr/bin/env python3
"""Writes the fuzz campaign's seed inputs into bench/fuzz/corpus/TARGET (one file each):
well-formed examples of every format the targets parse, from docs/protocol.md's byte tables
and the demo song. bench/fuzz/run grows each corpus from these."""
import hashlib
import json
import os
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def save(target, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "seed-" + hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


def rtp(seq=1000, ssrc=0x12345678, pt=96, payload=b"\xfc" + bytes(40), rollover=None, padding=0, members=()):
    ext = b"\x17" + struct.pack(">Q", 5 << 32) + b"\x23" + struct.pack(">I", 3) + b"\x37" + struct.pack(">Q", 4 << 32)
    if rollover is not None:
        ext += b"\x43" + struct.pack(">I", rollover)
    for member in members:  # member tags (element 5): the id, then 8 bytes of tag
        ext += b"\x59" + struct.pack(">H", member) + bytes(range(8))
    ext += bytes(-len(ext) % 4)
    b0 = 0x90 | (0x20 if padding else 0)
    body = payload + (bytes(padding - 1) + bytes([padding]) if padding else b"")
    return bytes([b0, pt]) + struct.pack(">HII", seq, 960 * seq, ssrc) + b"\xbe\xde" + struct.pack(">H", len(ext) // 4) + ext + body


def clock(kind, body, stamp=0, member=0, sequence=0):
    return b"TUTC" + bytes([3, kind]) + struct.pack(">HQQ", member, stamp, sequence) + body


def flac_frames():
    """FLAC frames as a lossless zone sends them (48 kHz, 24 bits, blocks of 192), by FFmpeg's
    encoder: the stream after its metadata, cut at each frame's sync code."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "noise.flac")
        subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "anoisesrc=r=48000:a=0.3:d=0.05", "-ac", "2",
                        "-sample_fmt", "s32", "-bits_per_raw_sample", "24", "-frame_size", "192", path], check=True)
        data = open(path, "rb").read()
    at, last = 4, False
    while not last:  # metadata blocks: a flag, a type, a 24-bit length
        last = data[at] & 0x80 != 0
        at += 4 + int.from_bytes(data[at + 1:at + 4], "big")
    frames, start = [], at
    for k in range(at + 1, len(data) - 1):
        if data[k] == 0xFF and data[k + 1] == 0xF8:
            frames.append(data[start:k])
            start = k
    return frames + [data[start:]]


def main():
    # Stream payloads: FLAC frames, L24 samples, an Opus packet.
    for frame in flac_frames()[:3]:
        save("payload", frame)
    save("payload", b"".join(struct.pack(">i", int(0x3FFFFF * ((k % 48) / 24 - 1)))[1:] for k in range(384)))
    save("payload", b"\xfc" + bytes(40))
    # RTP, RTX, padding, CSRCs, no extension.
    for p in [rtp(), rtp(rollover=3), rtp(rollover=0, members=(1, 2, 300)), rtp(pt=97, payload=b"\x03\xe8" + b"\xfc" + bytes(40)), rtp(padding=4),
              bytes([0x82, 96]) + struct.pack(">HII", 1, 2, 3) + struct.pack(">II", 4, 5) + b"\xfc\x00",
              bytes([0x80, 96]) + struct.pack(">HII", 1, 2, 3) + b"\xfc"]:
        save("rtp", p)
        save("srtp", p)
    # RTCP: a generic NACK, a sender report with SDES.
    nack = bytes([0x81, 205]) + struct.pack(">HII", 4, 42, 0x12345678) + struct.pack(">HH", 1000, 0b101) + struct.pack(">HH", 2000, 0)
    cname = b"tutti@host"
    sdes_len = (4 + 2 + len(cname) + 1 + 3) // 4 * 4
    sdes = bytes([0x81, 202]) + struct.pack(">HI", sdes_len // 4, 0x12345678) + bytes([1, len(cname)]) + cname
    sdes += bytes(4 + sdes_len - len(sdes))
    sr = bytes([0x80, 200]) + struct.pack(">HIQIII", 6, 0x12345678, 5 << 32, 960, 10, 4000) + sdes
    for p in [nack, sr]:
        save("rtcp", p)
        save("srtp", p)
    # Clock-port messages (header and body; the tag is checked before any of this is read).
    report = bytes([3, 2]) + struct.pack(">qIIHI", -3500, 50_000, 400_000, 7, 70_200) + struct.pack(">IIIII", 1000, 2, 1, 0, 0)
    report += struct.pack(">iIIII", -1200, 7, 3, 35_000, 2) + struct.pack(">IIII", 1, 0, 3, 0) + bytes([7]) + "Kitchen".encode()
    for m in [clock(1, struct.pack(">Q", 99) + bytes(24)), clock(2, struct.pack(">QQQQ", 1, 2, 3, 4)),
              clock(3, struct.pack(">HH", 5004, 30) + bytes(4)), clock(4, struct.pack(">I", 0xCAFEF00D) + bytes([96, 0, 0, 0])),
              clock(5, report), clock(6, struct.pack(">IHBBI", 9, 4567, 1, 0, 35_000)), clock(7, struct.pack(">IQ", 3, 7 << 32)),
              clock(8, b""), clock(9, struct.pack(">QB", 5, 7) + b"Kitchen" + bytes(64)),
              clock(10, struct.pack(">QHB", 5, 3, 60) + bytes(60), member=0), clock(11, struct.pack(">I", 2) + bytes(57), member=3, sequence=9),
              clock(12, struct.pack(">IB", 2, 56) + bytes(56), member=3)]:
        save("clock", m)
    # MP3 and its tags: the demo song's head, with and without its ID3 tag, and a small tag.
    song = open(os.path.join(ROOT, "assets", "demo", "tutti-demo.mp3"), "rb").read()
    head = song[:16384]
    # Media: a selector byte (bit 0: the input cannot seek; bit 1: no seeking while it opens),
    # then a file. The demo song's head, and a tenth of a second of every format ffmpeg makes.
    save("media", b"\x00" + head)
    save("media", b"\x01" + head)
    save("id3", song[:4096])
    if song[:3] == b"ID3":
        size = (song[6] << 21) | (song[7] << 14) | (song[8] << 7) | song[9]
        save("media", b"\x00" + song[10 + size: 10 + size + 8192])
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "s.wav")
        subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "sine=f=440:d=0.1:r=44100", "-ac", "2",
                        "-metadata", "title=T", "-metadata", "REPLAYGAIN_TRACK_GAIN=-3 dB", source], check=True)
        for ext, args in [("mp3", ["-c:a", "libmp3lame"]), ("m4a", ["-c:a", "aac"]), ("m4a", ["-c:a", "alac"]),
                          ("flac", ["-c:a", "flac"]), ("ogg", ["-c:a", "libvorbis"]), ("opus", ["-c:a", "libopus"]),
                          ("wav", ["-c:a", "pcm_s16le"]), ("aiff", ["-c:a", "pcm_s16be"]), ("aac", ["-c:a", "aac", "-f", "adts"]),
                          ("ts", ["-c:a", "aac", "-f", "mpegts"]), ("mka", ["-c:a", "libopus"]), ("wv", ["-c:a", "wavpack"])]:
            out = os.path.join(tmp, "x." + ext)
            subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", source] + args + [out], check=True)
            data = open(out, "rb").read()[:65000]
            save("media", b"\x00" + data)
            save("media", b"\x03" + data)
            if ext == "m4a":
                save("mp4", data)
    # HLS playlists.
    save("hls", b"#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=2500000,CODECS=\"avc1.4d401f,mp4a.40.2\",AUDIO=\"a\"\nv.m3u8\n"
                b"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"x, y\",DEFAULT=YES,URI=\"audio/a.m3u8\"\n"
                b"#EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS=\"mp4a.40.2\"\n/radio/128.m3u8\n")
    save("hls", b"#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:1200\n#EXT-X-MAP:URI=\"init.mp4\"\n"
                b"#EXTINF:6.0,Artist - Title\nseg1200.m4s\n#EXT-X-DISCONTINUITY\n#EXTINF:5.5,\nseg1201.m4s\n"
                b"#EXT-X-KEY:METHOD=NONE\n#EXTINF:6,\nhttps://cdn.example/seg1202.aac\n#EXT-X-ENDLIST\n")

    def frame(fid, body):
        return fid.encode() + struct.pack(">I", len(body)) + b"\x00\x00" + body
    frames = frame("TIT2", b"\x03Title") + frame("TPE1", b"\x01\xff\xfeA\x00r\x00") + frame("USLT", b"\x03eng\x00words")
    frames += frame("SYLT", b"\x03eng\x02\x01\x00line\x00" + struct.pack(">I", 1000))
    frames += frame("APIC", b"\x00image/png\x00\x03\x00" + bytes(16))
    save("id3", b"ID3\x03\x00\x00" + bytes([0, 0, len(frames) >> 7, len(frames) & 0x7F]) + frames)
    save("id3", bytes(100) + b"TAG" + b"Title".ljust(30, b"\0") + b"Artist".ljust(30, b"\0") + b"Album".ljust(30, b"\0")
         + b"2024" + bytes(28) + b"\x00\x01\x11")
    # Lyrics.
    lrc = open(os.path.join(ROOT, "assets", "demo", "tutti-demo.lrc"), "rb").read()
    save("lrc", lrc[:8192])
    enhanced = "[ti:T]\n[ar:A]\n[offset:+250]\n[00:01.00]<00:01.00>one <00:01.50>two\nM: [00:02.00][00:05.00]duet\n[00:03.00]\n"
    save("lrc", enhanced.encode())
    save("lrc", b"\xff\xfe" + enhanced.encode("utf-16-le"))
    save("lrc", "[00:01.00]你好\n".encode("gb18030"))
    # Playlists.
    save("playlist", b"#EXTM3U\n#EXTINF:123,Artist - Title\nsong.mp3\n/abs/other.mp3\nhttp://host/x.mp3\n")
    save("playlist", b"[playlist]\nFile1=a.mp3\nTitle1=A\nLength1=10\nNumberOfEntries=1\nVersion=2\n")
    save("playlist", b"#EXTM3U\n../up/b.mp3\n/root.mp3\n//other/c.mp3\n./d.mp3?q=1#f\n")
    # ICY streams: interval (2 bytes, minus one), chunk size (minus one), then audio and blocks.
    title = b"StreamTitle='Alpha - One';StreamUrl='';"
    title += bytes(-len(title) % 16)
    save("icy", bytes([0, 15, 6]) + bytes(range(16)) + bytes([len(title) // 16]) + title + bytes(range(16)) + b"\0" + bytes(8))
    # Configuration files.
    save("toml", b'# a room\ncoordinator = "hall.local:5005"\nunicast = true\nlatency-ms = 150\n'
                 b"unicast-to = ['a:1', \"b:2\",]\nratio = -1.5e3\nhex = 0xff\n")
    save("toml", b'name = """\nK\\u00e9 \\\n  x"""\nraw = \'\'\'C:\\m\'\'\'\n[table]\nd = 1979-05-27\n')
    # API bodies: a selector byte, then JSON (bench/fuzz/Sources: api).
    for selector, body in [(0, {"position": 12.5}), (1, {"seconds": -10}), (2, {"paths": ["a.mp3"], "placement": "next"}),
                           (3, {"volume": 40, "muted": False}), (4, {"name": "Kitchen", "volume": 10, "outputDelayMs": 35}),
                           (5, {"publicKey": "AAAA", "proof": "BBBB"}), (6, {"mode": "shuffle"}),
                           (4, {"zone": "Kids Room"}), (5, {"name": "Kids Room"}), (6, {"zone": "kitchen"}),
                           (7, {"type": "time", "id": 1, "t1": 123.5})]:
        save("api", bytes([selector]) + json.dumps(body).encode())
    # Sendspin: a session's opening texts, a client/time, an audio chunk (">BqI" then audio),
    # and sealed frames as length-prefixed plaintexts (a length byte in 4-byte units, then the
    # plaintext: its type first), a whole JSON then a binary in three fragments.
    client_id = "D6c9zz2pH1P3JTpaTqCEV3TjrcKyq3Eem1FO4QJzMGk"
    for message in [{"type": "client/init", "payload": {"client_id": client_id, "version": 1, "suite": "25519_ChaChaPoly_SHA256"}},
                    {"type": "server/init", "payload": {"server_id": client_id, "version": 1}},
                    {"type": "noise/handshake", "payload": {"data": "A" * 64}},
                    {"type": "client/time", "payload": {"client_transmitted": 123456}},
                    # the session's messages, both ways (tutti's server reads a player's, its follower a server's)
                    {"type": "client/state", "payload": {"available": True, "player": {"volume": 25, "muted": False, "required_lead_time_ms": 250}}},
                    {"type": "server/time", "payload": {"client_transmitted": 5, "server_received": 100, "server_transmitted": 101}},
                    {"type": "stream/start", "payload": {"server_transmitted": 1, "player": {"codec": "pcm", "sample_rate": 48000,
                                                                                            "channels": 2, "bit_depth": 16}}},
                    {"type": "server/command", "payload": {"player": {"command": "volume", "volume": 40}}},
                    # pairing, both ways
                    {"type": "client/pair-init", "payload": {"pairing_index": 1, "commit_B": "A" * 43}},
                    {"type": "client/pair-auth", "payload": {"pake_msg_2": "A" * 43}},
                    {"type": "client/pair-confirm", "payload": {"client_kc": "A" * 86, "wrapped_nonce_B": "A" * 64}},
                    {"type": "client/pair-finalize", "payload": {"wrapped_psk": "A" * 64}},
                    {"type": "client/pair-pending", "payload": {"pairing_index": 1, "message": "press"}},
                    {"type": "server/pair-init", "payload": {"nonce_A": "A" * 43}},
                    {"type": "server/pair-auth", "payload": {"pake_msg_1": "A" * 43}},
                    {"type": "pair/abort", "payload": {"reason": "user_cancelled"}}]:
        save("sendspin", json.dumps(message).encode())
    save("sendspin", bytes([0x82, 126, 0, 130]) + bytes(range(130)))  # a WebSocket frame, the 16-bit length form
    save("sendspin", struct.pack(">BqI", 4, 1234567, 150000) + bytes(40))
    save("sendspin", b"SP:0MRSWMZ3INFVGW3DNNZXXA4LSON9HK5TXPB4XU634PV7H7AEBQKBQAAICAMCAKBQHBAEQUCYMBUHA6EARCIJRIFIWC4MBSGQ3DQOR4HY")
    save("sendspin", b"123-456")

    def piece(plaintext):
        plaintext += bytes(-len(plaintext) % 4)
        return bytes([len(plaintext) // 4]) + plaintext

    save("sendspin", piece(b"\x00{}") + piece(b"\x01\x02\x08" + bytes(100)) + piece(b"\x01\x00" + bytes(50)) + piece(b"\x01\x01" + bytes(30)))
    print("seeds written to", os.path.join(HERE, "corpus"))


if __name__ == "__main__":
    main()
