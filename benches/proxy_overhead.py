#!/usr/bin/env python3
"""The proxy's CPU cost: 16 clients each send 60 Hz inputs (a 40-byte datagram) through
`rtype-inspect proxy` to a server on loopback that sends each of them 60 Hz snapshots (a
600-byte datagram), for DURATION seconds (default 20). The proxy's user + system CPU time is read
with getrusage(RUSAGE_CHILDREN) once it has exited, and printed as a share of one core over the
run, with the datagrams relayed.

With PAYLOADS=CAPTURE in the environment (an rtype capture, pcap, Ethernet, IPv4, 17-byte
headers), the datagrams are real ones the proxy decodes: its client's CLIENT_INPUTs and its
server's SERVER_SNAPSHOTs, in turn (their sequence numbers start again when the capture's run
out), rather than zero bytes no dialect recognises.

    [PAYLOADS=CAPTURE] python3 benches/proxy_overhead.py [BINARY] [DURATION] [EXTRA PROXY ARGS...]
"""
import json
import os
import resource
import socket
import struct
import subprocess
import sys
import time

binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/rtype-inspect"
duration = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
extra = sys.argv[3:]
CLIENTS, HZ = 16, 60


def payloads(path):
    """The UDP payloads of a little-endian pcap of Ethernet/IPv4 frames: the first sender's
    CLIENT_INPUTs (message type 0x05) and the others' SERVER_SNAPSHOTs (0x14)."""
    data = open(path, "rb").read()
    inputs, snapshots, client, at = [], [], None, 24
    while at + 16 <= len(data):
        length = struct.unpack_from("<I", data, at + 8)[0]
        frame = data[at + 16:at + 16 + length]
        at += 16 + length
        ip = frame[14:]
        udp = ip[(ip[0] & 15) * 4:]
        source, payload = (ip[12:16], udp[0:2]), udp[8:]
        client = client or source
        if len(payload) > 6:
            if source == client and payload[6] == 0x05:
                inputs.append(payload)
            elif source != client and payload[6] == 0x14:
                snapshots.append(payload)
    return inputs, snapshots


inputs, snapshots = ([bytes(40)], [bytes(600)])
if os.environ.get("PAYLOADS"):
    inputs, snapshots = payloads(os.environ["PAYLOADS"])

server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
server.bind(("127.0.0.1", 0))
server.setblocking(False)
proxy = subprocess.Popen(
    [binary, "proxy", "--listen", "127.0.0.1:0", "--to", "%s:%d" % server.getsockname(),
     "--duration", str(duration), "--format", "json"] + extra,
    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
listen = proxy.stderr.readline().split()[2].decode()
host, port = listen.rsplit(":", 1)
clients = []
for _ in range(CLIENTS):
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.bind(("127.0.0.1", 0))
    c.setblocking(False)
    clients.append(c)
upstream = set()
start = time.monotonic()
tick = 0
while time.monotonic() - start < duration - 1:
    for c in clients:
        c.sendto(inputs[tick % len(inputs)], (host, int(port)))
    try:
        while True:
            _, addr = server.recvfrom(2048)
            upstream.add(addr)
    except BlockingIOError:
        pass
    for addr in upstream:
        server.sendto(snapshots[tick % len(snapshots)], addr)
    for c in clients:
        try:
            while True:
                c.recvfrom(2048)
        except BlockingIOError:
            pass
    tick += 1
    time.sleep(max(0.0, start + tick / HZ - time.monotonic()))
out, _ = proxy.communicate()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = usage.ru_utime + usage.ru_stime
summary = json.loads(out)
relayed = sum(c[d]["received"] for c in summary["clients"]
              for d in ("client_to_server", "server_to_client"))
decoded = [c["decoded"]["snapshots"]["ticks"] for c in summary["clients"]]
print("decoded snapshot ticks per client: %d to %d" % (min(decoded), max(decoded)))
print("clients %d, %.1f s, %d datagrams relayed (%.0f/s), proxy CPU %.3f s (user %.3f, system "
      "%.3f) = %.2f %% of one core, max RSS %d KiB"
      % (len(summary["clients"]), summary["seconds"], relayed, relayed / summary["seconds"], cpu,
         usage.ru_utime, usage.ru_stime, 100 * cpu / summary["seconds"], usage.ru_maxrss))
