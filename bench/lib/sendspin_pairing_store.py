#!/usr/bin/env python3
"""Prepares the reference player's pairing store (`sendspin daemon --settings-dir DIR`), as
its owner would through an app: a one-time Pairing PSK it accepts (printing the token that
carries it, with the player's id, for the server's operator), or a static pairing code.

Usage: sendspin_pairing_store.py DIR token        -> prints SP:0… (and makes the identity if none)
       sendspin_pairing_store.py DIR static CODE  -> sets an 8-digit static code, the only code it offers
"""
import asyncio
import os
import sys
from dataclasses import replace

from aiosendspin.noise.keys import psk_id_for
from aiosendspin.noise.pairing_token import PSKPairingToken, encode_psk_token
from aiosendspin.noise.trust_store import PairingPsk
from sendspin.settings import get_client_identity, get_client_pairing_store


async def main():
    folder, what = sys.argv[1], sys.argv[2]
    identity = await get_client_identity("daemon", folder)
    store = await get_client_pairing_store("daemon", folder)
    if what == "token":
        psk = os.urandom(32)
        await store.set_pairing_psk(PairingPsk(psk_id=psk_id_for(psk), psk=psk))
        print(encode_psk_token(PSKPairingToken(client_id=identity.peer_id, pairing_psk=psk)))
    elif what == "static":
        await store.set_static_pairing_code(sys.argv[3])
        config = await store.get_pairing_config()
        # (A player that shows codes offers only those: the reference drops its static code
        # then. This one keeps to its static code, as a device without a display does.)
        await store.store_pairing_config(replace(config, static_pairing_code_enabled=True, dynamic_pairing_code_enabled=False))
        print(identity.peer_id)
    else:
        sys.exit("token or static CODE")


if __name__ == "__main__":
    asyncio.run(main())
