#!/usr/bin/env python3
"""The proxy's CPU cost on real traffic: a capture played through `rtype-inspect proxy` on
loopback at its own pace, both ways. `replay CAPTURE --side server` stands in for the server
(it sends the capture's server datagrams, with their timing, to the first client that writes to
it), `replay CAPTURE --to PROXY --speed 1` plays the client side. The proxy runs for the
capture's length and 2 s more; its own user + system CPU time is read with wait4() when it
exits, and printed with the datagrams it relayed and what it decoded.

    python3 benches/proxy_replay.py [BINARY] [CAPTURE] [EXTRA PROXY ARGS...]
"""
import json
import os
import subprocess
import sys

binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/rtype-inspect"
capture = sys.argv[2] if len(sys.argv) > 2 else "../shared/captures/rtype/reference-17byte-1client.pcap"
extra = sys.argv[3:]

stats = json.loads(subprocess.run([binary, "stats", "--format", "json", capture],
                                  capture_output=True, check=True).stdout)
seconds = max(c["duration_s"] for c in stats["conversations"]) + 2.0


def address(process):
    """The address a process says it listens on, in its first line on stderr."""
    return process.stderr.readline().split()[-1].decode().strip("()")


server = subprocess.Popen([binary, "replay", capture, "--side", "server",
                           "--listen", "127.0.0.1:0"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
proxy = subprocess.Popen([binary, "proxy", "--listen", "127.0.0.1:0", "--to", address(server),
                          "--duration", str(seconds), "--format", "json"] + extra,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
listen = proxy.stderr.readline().split()[2].decode()
client = subprocess.run([binary, "replay", capture, "--to", listen, "--speed", "1"],
                        capture_output=True)
out = proxy.stdout.read()
_, status, usage = os.wait4(proxy.pid, 0)
server.kill()
server.wait()
cpu = usage.ru_utime + usage.ru_stime
summary = json.loads(out)
relayed = sum(c[d]["received"] for c in summary["clients"]
              for d in ("client_to_server", "server_to_client"))
decoded = [c["decoded"] for c in summary["clients"]]
print("%s: %d clients, %.1f s, %d datagrams relayed (%.0f/s), proxy CPU %.3f s "
      "(user %.3f, system %.3f) = %.2f %% of one core, max RSS %d KiB; decoded snapshot ticks %s, "
      "RTT pairs %s" % (os.path.basename(capture), len(summary["clients"]), summary["seconds"],
                        relayed, relayed / summary["seconds"], cpu, usage.ru_utime,
                        usage.ru_stime, 100 * cpu / summary["seconds"], usage.ru_maxrss,
                        [d["snapshots"]["ticks"] for d in decoded],
                        [d["rtt_ms"]["pairs"] for d in decoded]))
