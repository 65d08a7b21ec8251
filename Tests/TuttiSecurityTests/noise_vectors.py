#!/usr/bin/env python3
"""Noise KKpsk2 vectors from the reference `noiseprotocol` package (the one Sendspin's own
aiosendspin uses), for NoiseTests: fixed static and ephemeral keys on both sides, a prologue,
a pre-shared key and payloads; the two handshake messages, the handshake hash and transport
messages each way, for both of Sendspin's suites. Prints JSON.

Usage (any Python with the package): pip install noiseprotocol; python3 noise_vectors.py
"""
import json
import warnings

from noise.connection import Keypair, NoiseConnection


def key(byte):
    return bytes([byte]) * 32


def side(name, initiator, static, remote_public, ephemeral, prologue, psk):
    conn = NoiseConnection.from_name(name)
    conn.set_as_initiator() if initiator else conn.set_as_responder()
    conn.set_keypair_from_private_bytes(Keypair.STATIC, static)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fixed ephemeral: vectors only
        conn.set_keypair_from_private_bytes(Keypair.EPHEMERAL, ephemeral)
    conn.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, remote_public)
    conn.set_prologue(prologue)
    conn.set_psks(psks=[psk])
    conn.start_handshake()
    return conn


def public(private):
    conn = NoiseConnection.from_name(b"Noise_NN_25519_ChaChaPoly_SHA256")
    conn.set_keypair_from_private_bytes(Keypair.STATIC, private)
    return conn.noise_protocol.keypairs["s"].public_bytes


def main():
    server_static, client_static = key(0x11), key(0x22)
    server_ephemeral, client_ephemeral = key(0x33), key(0x44)
    prologue = b'{"type":"client/init"}{"type":"server/init"}'
    psk = bytes(range(32))
    vectors = []
    for suite in ("25519_ChaChaPoly_SHA256", "25519_AESGCM_SHA256"):
        name = f"Noise_KKpsk2_{suite}".encode()
        server = side(name, True, server_static, public(client_static), server_ephemeral, prologue, psk)
        client = side(name, False, client_static, public(server_static), client_ephemeral, prologue, psk)
        message1 = server.write_message(b"hello from the server")
        payload1 = client.read_message(message1)
        message2 = client.write_message(b"")
        payload2 = server.read_message(message2)
        to_client = [server.encrypt(p) for p in (b'{"type":"server/hello"}', b"", bytes(range(200)))]
        to_server = [client.encrypt(p) for p in (b'{"type":"client/hello"}',)]
        vectors.append({
            "suite": suite,
            "server_static": server_static.hex(), "client_static": client_static.hex(),
            "server_ephemeral": server_ephemeral.hex(), "client_ephemeral": client_ephemeral.hex(),
            "server_public": public(server_static).hex(), "client_public": public(client_static).hex(),
            "prologue": prologue.hex(), "psk": psk.hex(),
            "message1": bytes(message1).hex(), "payload1": bytes(payload1).hex(),
            "message2": bytes(message2).hex(), "payload2": bytes(payload2).hex(),
            "handshake_hash": server.get_handshake_hash().hex(),
            "to_client": [bytes(c).hex() for c in to_client],
            "to_server": [bytes(c).hex() for c in to_server],
        })
        assert server.get_handshake_hash() == client.get_handshake_hash()
    print(json.dumps(vectors, indent=1))


if __name__ == "__main__":
    main()
