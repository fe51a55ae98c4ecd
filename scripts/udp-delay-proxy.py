#!/usr/bin/env python3
"""A UDP path with a round trip, for benchmarks on a machine without netem.

    scripts/udp-delay-proxy.py LISTEN_PORT TARGET_HOST:TARGET_PORT ONE_WAY_MS

Listens on 127.0.0.1:LISTEN_PORT (0: a free port); every datagram from a client is sent on to TARGET ONE_WAY_MS
later from a socket of that client's own (so the target sees one address per client, as behind
a NAT), and every datagram the target sends back to that socket reaches the client ONE_WAY_MS
later. Order is kept in each direction. Prints "ready PORT" once listening; runs until killed.
"""
import asyncio
import sys


class Upstream(asyncio.DatagramProtocol):
    """The socket one client's datagrams leave from; the target's answers come back through it."""

    def __init__(self, front, client, delay):
        self.front, self.client, self.delay = front, client, delay
        self.transport = None
        self.waiting = []  # due before the socket was open: sent, in order, once it is

    def connection_made(self, transport):
        self.transport = transport
        for data, target in self.waiting:
            transport.sendto(data, target)
        self.waiting = []

    def datagram_received(self, data, addr):
        asyncio.get_running_loop().call_later(self.delay, self.front.sendto, data, self.client)


class Front(asyncio.DatagramProtocol):
    def __init__(self, target, delay):
        self.target, self.delay = target, delay
        self.upstreams = {}
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        loop = asyncio.get_running_loop()
        up = self.upstreams.get(addr)
        if up is None:
            up = Upstream(self.transport, addr, self.delay)
            self.upstreams[addr] = up
            loop.create_task(self.open(up))
        loop.call_later(self.delay, self.forward, up, data)

    async def open(self, up):
        await asyncio.get_running_loop().create_datagram_endpoint(lambda: up, local_addr=("127.0.0.1", 0))

    def forward(self, up, data):
        if up.transport is None:
            up.waiting.append((data, self.target))
        else:
            up.transport.sendto(data, self.target)


async def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    port, target, one_way = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]) / 1000
    host, _, tport = target.rpartition(":")
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(lambda: Front((host, int(tport)), one_way), local_addr=("127.0.0.1", port))
    print("ready", transport.get_extra_info("sockname")[1], flush=True)
    await asyncio.Event().wait()


asyncio.run(main())
