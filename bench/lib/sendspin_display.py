#!/usr/bin/env python3
"""A Sendspin display by the reference implementation (aiosendspin's client with the artwork
role, no player), for SendspinTests: it asks for channel 0 as the album's cover, FORMAT at
WIDTHxHEIGHT, and prints each picture it is shown as a line:

  ART <channel> <bytes> <format> <width>x<height> <r,g,b at the middle> <r,g,b at the top>   (0 bytes: cleared)

Usage: sendspin_display.py ws://HOST:PORT/PATH jpeg 120x80   (with the reference virtual environment's Python)
"""
import asyncio
import io
import sys

from aiosendspin.client import SendspinClient
from aiosendspin.models.artwork import ArtworkChannel
from aiosendspin.models.types import ArtworkSource, PictureFormat, Roles
from aiosendspin.noise import Identity
from aiosendspin.noise.trust_store import InMemoryClientPairingStore
from PIL import Image


async def main(url, picture_format, size):
    width, height = (int(v) for v in size.split("x"))
    channel = ArtworkChannel(source=ArtworkSource.ALBUM, format=PictureFormat(picture_format), width=width, height=height)
    client = SendspinClient(Identity.generate(), "Reference display", [Roles.ARTWORK],
                            pairing_store=InMemoryClientPairingStore(), artwork_channels=[channel])

    def shown(index, data):
        if not data:
            print(f"ART {index} 0", flush=True)
            return
        image = Image.open(io.BytesIO(data)).convert("RGB")
        middle = image.getpixel((image.width // 2, image.height // 2))
        top = image.getpixel((image.width // 2, 2))
        fmt = Image.open(io.BytesIO(data)).format.lower()
        print(f"ART {index} {len(data)} {fmt} {image.width}x{image.height} "
              f"{','.join(map(str, middle))} {','.join(map(str, top))}", flush=True)

    # A session under the published sentinel key (the test's house admits unpaired players).
    await client.set_unpaired_access(enabled=True)
    client.add_artwork_listener(shown)
    await client.connect(url)
    print("CONNECTED", flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
