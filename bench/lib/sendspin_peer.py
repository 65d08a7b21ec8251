#!/usr/bin/env python3
"""One side of a Sendspin session's opening and sealed transport, by the reference
implementation (aiosendspin's Noise driver and encrypted WebSocket), over this process's
standard input and output instead of a socket: each WebSocket frame is a line, `T <text>`
or `B <hex>`. tutti's own side (TuttiSendspin) is driven against it by SendspinTests.

  server: waits for client/init, admits the client under the published sentinel (unpaired
          access), completes the handshake as the Noise initiator, sends a sealed
          server/hello, then prints `GOT TEXT <text>` or `GOT BINARY <length> <sha256>` for
          each sealed message until one of type `client/goodbye` arrives.
  client: sends client/init, answers under the sentinel, prints each sealed message it gets
          as above, and after the first one sends a sealed client/hello, a 300,000-byte
          binary message (type 8: fragments) and client/goodbye.

Run with the Python of the reference implementation's virtual environment (deploy/test-setup.sh).
"""
import asyncio
import hashlib
import sys

from aiohttp import WSMessage, WSMsgType

from aiosendspin.noise import (
    SENTINEL_PSK,
    Identity,
    NoiseCipherSuite,
    psk_id_for,
    run_handshake_client,
    run_handshake_server,
)
from aiosendspin.noise.trust_store import PskCategory, ResolvedPsk


class LineSocket:
    """A WebSocket whose frames are lines on standard input and output."""

    def __init__(self, reader):
        self.reader = reader
        self.closed = False
        self.close_code = None

    async def send_str(self, data):
        sys.stdout.write("T " + data + "\n")
        sys.stdout.flush()

    async def send_bytes(self, data):
        sys.stdout.write("B " + bytes(data).hex() + "\n")
        sys.stdout.flush()

    async def receive(self):
        line = (await self.reader.readline()).decode()
        if not line:
            self.closed = True
            return WSMessage(WSMsgType.CLOSED, None, None)
        kind, _, body = line.rstrip("\n").partition(" ")
        if kind == "T":
            return WSMessage(WSMsgType.TEXT, body, None)
        return WSMessage(WSMsgType.BINARY, bytes.fromhex(body), None)

    async def close(self):
        self.closed = True
        return True

    def exception(self):
        return None


def sentinel():
    return ResolvedPsk(psk_id_for(SENTINEL_PSK), SENTINEL_PSK, PskCategory.SENTINEL)


def report(message):
    if message.type is WSMsgType.TEXT:
        print("GOT TEXT " + message.data, flush=True)
    elif message.type is WSMsgType.BINARY:
        print(f"GOT BINARY {len(message.data)} {hashlib.sha256(message.data).hexdigest()}", flush=True)
    else:
        print(f"GOT {message.type.name}", flush=True)


async def main(role, suite):
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    ws = LineSocket(reader)
    identity = Identity.generate()
    if role == "server":

        async def provide(client_id):
            return sentinel()

        result = await run_handshake_server(ws, local_identity=identity, psk_provider=provide)
        print(f"ADMITTED {result.peer_id} {result.psk.category.value}", flush=True)
        await result.encrypted_ws.send_str('{"type":"server/hello","payload":{"name":"reference"}}')
        while True:
            message = await result.encrypted_ws.receive()
            report(message)
            if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY) or (
                    message.type is WSMsgType.TEXT and "client/goodbye" in message.data):
                break
    else:

        async def resolve(psk_id, category):
            return None  # no pairing: answered under the sentinel

        result = await run_handshake_client(ws, local_identity=identity, suite=NoiseCipherSuite(suite), psk_resolver=resolve)
        print(f"CONNECTED {result.peer_id} {result.psk.category.value}", flush=True)
        report(await result.encrypted_ws.receive())
        await result.encrypted_ws.send_str('{"type":"client/hello","payload":{"name":"reference"}}')
        await result.encrypted_ws.send_bytes(bytes([8]) + bytes(i * 7 % 256 for i in range(299_999)))
        await result.encrypted_ws.send_str('{"type":"client/goodbye","payload":{"reason":"shutdown"}}')
        report(await result.encrypted_ws.receive())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "25519_ChaChaPoly_SHA256"))
