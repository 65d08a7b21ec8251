#!/usr/bin/env python3
"""Sendspin pairing vectors from the reference aiosendspin (10.x), for SendspinPairingTests:
a Pairing PSK token and a pairing-code token, the player's commitment to its nonce, the
dynamic pairing code and its binary form, CPace's session id and the wrap keys, and a key
wrapped in each suite. Prints JSON.

Usage (a Python with aiosendspin): python3 pairing_vectors.py
"""
import json

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from aiosendspin.noise import pairing as p
from aiosendspin.noise import pairing_code as code
from aiosendspin.noise.keys import b64url_encode
from aiosendspin.noise.pairing_token import (PSKPairingToken, decode_psk_token, encode_pairing_code_token,
                                             encode_psk_token)


class FakeCPace:
    isk = bytes(range(64))


def main():
    client_id = b64url_encode(bytes(range(100, 132)))
    psk = bytes(range(32))
    hh, na, nb = bytes([1]) * 32, bytes([2]) * 32, bytes([3]) * 32
    sid = p._pake_sid(hh, 2, 3)
    psk_wrap = p._wrap_key(p._PSK_WRAP_LABEL, sid, FakeCPace())
    nonce_wrap = p._wrap_key(p._NONCE_WRAP_LABEL, sid, FakeCPace())
    token = encode_psk_token(PSKPairingToken(client_id=client_id, pairing_psk=psk))
    assert decode_psk_token(token.lower()).pairing_psk == psk
    print(json.dumps({
        "client_id": client_id, "psk": psk.hex(), "psk_token": token,
        "qr": code.derive_qr_code(hh, na, nb).hex(), "code_token": encode_pairing_code_token(code.derive_qr_code(hh, na, nb)),
        "handshake_hash": hh.hex(), "nonce_a": na.hex(), "nonce_b": nb.hex(),
        "commit_b": code.commit(nb).hex(), "digits": code.derive_digits(hh, na, nb),
        "digits_zero": code.derive_digits(bytes(32), bytes(32), bytes([0x5e]) * 32),
        "sid": sid.hex(), "isk": FakeCPace.isk.hex(), "psk_wrap": psk_wrap.hex(), "nonce_wrap": nonce_wrap.hex(),
        "wrapped_chacha": ChaCha20Poly1305(psk_wrap).encrypt(bytes(12), psk, None).hex(),
        "wrapped_aesgcm": AESGCM(psk_wrap).encrypt(bytes(12), psk, None).hex(),
    }, indent=1))


if __name__ == "__main__":
    main()
