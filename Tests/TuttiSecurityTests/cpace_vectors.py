#!/usr/bin/env python3
"""CPace (CPACE-X25519-SHA512) vectors from the reference `cpace` package (the one Sendspin's
own aiosendspin pairs with), for CPaceTests: for fixed scalars, a password-related string,
a session id and both sides' associated data (Sendspin's "server" and "client"), the
generator, both public shares, the intermediate session key and both confirmation tags.
Also a generator for an empty PRS and a long one (the zero padding runs out). Prints JSON.

Usage (any Python with the package): pip install cpace; python3 cpace_vectors.py
"""
import json

from cpace import CPace, CPaceRole, _calculate_generator, _scalar_mult_vfy


def run(prs, sid, scalar_a, scalar_b, ci=b""):
    g = _calculate_generator(prs, ci, sid)
    ya, yb = _scalar_mult_vfy(scalar_a, g), _scalar_mult_vfy(scalar_b, g)
    a = CPace(role=CPaceRole.INITIATOR, sid=sid, ad=b"server", scalar=scalar_a, public_share=ya)
    b = CPace(role=CPaceRole.RESPONDER, sid=sid, ad=b"client", scalar=scalar_b, public_share=yb)
    a.derive(yb, b"client")
    b.derive(ya, b"server")
    assert a.isk == b.isk and b.verify(a.tag()) and a.verify(b.tag())
    return {"prs": prs.hex(), "sid": sid.hex(), "ci": ci.hex(), "scalar_a": scalar_a.hex(), "scalar_b": scalar_b.hex(),
            "generator": g.hex(), "ya": ya.hex(), "yb": yb.hex(), "isk": a.isk.hex(), "ta": a.tag().hex(), "tb": b.tag().hex()}


def main():
    sid = b"sendspin-pair-pake-v1" + bytes(range(32)) + (1).to_bytes(4, "big") + (1).to_bytes(4, "big")
    runs = [
        run(b"12345678", sid, bytes([0x11]) * 32, bytes([0x22]) * 32),
        run(b"654321", sid[:-1] + b"\x02", bytes(range(32)), bytes(range(32, 64))),
        run(b"", b"", bytes([0x33]) * 32, bytes([0x44]) * 32, ci=b"channel"),
        run(bytes(range(200)), sid, bytes([0x55]) * 32, bytes([0x66]) * 32),
    ]
    print(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
