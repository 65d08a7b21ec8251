#!/usr/bin/env python3
"""A Sendspin remote by the reference implementation (aiosendspin's client, the controller and
metadata roles, no player), for SendspinTests: it connects to URL, prints what the server's
metadata and controller roles say as lines, and carries out the commands it reads from its
standard input, one a line (`next`, `volume 30`, `repeat_all`, `seek 5000` ...).

  META <json>     the metadata role's state (title, artist, album, progress ...)
  CONTROL <json>  the controller role's state (supported commands, volume, repeat ...)
  SENT <command>  a command went; ERROR <text> it did not

Usage: sendspin_remote.py ws://HOST:PORT/PATH   (with the reference virtual environment's Python)
"""
import asyncio
import json
import sys

from aiosendspin.client import SendspinClient
from aiosendspin.models.types import MediaCommand, Roles
from aiosendspin.noise import Identity
from aiosendspin.noise.trust_store import InMemoryClientPairingStore


def as_dict(value):
    if value is None:
        return None
    return value.to_dict() if hasattr(value, "to_dict") else value


async def main(url):
    client = SendspinClient(Identity.generate(), "Reference remote", [Roles.CONTROLLER, Roles.METADATA],
                            pairing_store=InMemoryClientPairingStore())

    def metadata(payload):
        if payload is not None and not isinstance(getattr(payload, "metadata", None), type(None)):
            print("META " + json.dumps(as_dict(payload.metadata), default=str), flush=True)

    def controller(payload):
        if payload is not None and getattr(payload, "controller", None) is not None:
            print("CONTROL " + json.dumps(as_dict(payload.controller), default=str), flush=True)

    # Sessions under the published sentinel key (tutti's server admits unpaired players).
    await client.set_unpaired_access(enabled=True)
    client.add_metadata_listener(metadata)
    client.add_controller_state_listener(controller)
    await client.connect(url)
    print("CONNECTED", flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = (await reader.readline()).decode().strip()
        if not line:
            break
        word, _, argument = line.partition(" ")
        try:
            command = MediaCommand(word)
            keywords = {}
            if command is MediaCommand.VOLUME:
                keywords["volume"] = int(argument)
            elif command is MediaCommand.MUTE:
                keywords["mute"] = argument == "true"
            elif command is MediaCommand.SEEK:
                keywords["position_ms"] = int(argument)
            await client.send_group_command(command, **keywords)
            print("SENT " + line, flush=True)
        except Exception as error:  # noqa: BLE001 - reported to the test
            print(f"ERROR {line}: {error}", flush=True)
    await client.disconnect()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
