#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with seeds from the sample captures, the real captures and the
# profiles. Needs python3 and tshark (for the UDP payloads of the datagram target).
# Usage: fuzz/seed.sh            (from anywhere; idempotent, seeds are named by content)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=fuzz/corpus
mkdir -p "$corpus"/{capture_reader,datagram,chunks,profile,config}

captures=(samples/*.pcap samples/*.pcapng samples/*.pcap.gz tests/fixtures/*.pcap)

# capture_reader: the small samples whole; the real captures cut to their first 150 records
# (libFuzzer's input size follows the largest seed, and big seeds make every run slow).
python3 - "$corpus/capture_reader" "${captures[@]}" <<'PY'
import hashlib, os, struct, sys
out, files = sys.argv[1], sys.argv[2:]
def save(data):
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
for path in files:
    data = open(path, "rb").read()
    if len(data) <= 96 * 1024:
        save(data)
        continue
    magic = data[:4]
    endian = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}.get(magic)
    if endian is None:
        continue
    at, records = 24, 0
    while at + 16 <= len(data) and records < 150:
        caplen = struct.unpack(endian + "I", data[at + 8:at + 12])[0]
        at += 16 + caplen
        records += 1
    save(data[:min(at, len(data))])
PY

# datagram: distinct UDP payloads (at most 12 per dialect and message type per file), framed as
# the target's first byte says (0: as is; 2: rtype, length and CRC fixed by the target; 4/5: rt
# after its magic; 6: rtnp JSON after its `{`; 7: rtnp envelope Text).
for f in "${captures[@]}"; do
  tshark -r "$f" -T fields -e udp.payload 2>/dev/null || true
done > "$corpus/.payloads"
python3 - "$corpus/datagram" "$corpus/.payloads" <<'PY'
import collections, hashlib, os, sys
out = sys.argv[1]
seen = collections.Counter()
def save(mode, data):
    blob = bytes([mode]) + data
    with open(os.path.join(out, hashlib.sha1(blob).hexdigest()), "wb") as f:
        f.write(blob)
for line in open(sys.argv[2]):
    line = line.strip().split(",")[0]
    if not line:
        continue
    p = bytes.fromhex(line)
    if p[:4] == b"\xa3\x5f\xc8\x1d":
        key = ("rtype", p[6] if len(p) > 6 else None, len(p) > 40)
    elif p[:2] in (b"RT", b"TR"):
        key = ("rt", p[2] if len(p) > 2 else None)
    else:
        key = ("other", p[:1], p.find(b'"type":"') >= 0 and p[p.find(b'"type":"') + 8:][:6])
    seen[key] += 1
    if seen[key] > 12:
        continue
    save(0, p)
    if key[0] == "rtype" and len(p) >= 21 and not p[4] & 0x80:
        save(2, p[4:-4])
    elif key[0] == "rt":
        save(4 if p[:2] == b"RT" else 5, p[2:])
    elif p[:1] == b"{":
        save(6, p[1:])
    elif p[:4] == b"\0\0\0\0" and len(p) > 24:
        save(7, p[24:].split(b"\0")[0])
PY
rm -f "$corpus/.payloads"

# chunks: a few byte strings; the target reads operations from any bytes.
for s in 0 1 2 3; do
  head -c $((64 << s)) /dev/urandom > "$corpus/chunks/random-$s"
done

# profile: the bundled profiles.
cp samples/profiles/*.toml "$corpus/profile/"

# config: the check config documented in src/report/check.rs, and the bundled profiles' neighbours.
cat > "$corpus/config/documented.toml" <<'TOML'
fail_on = "warning"
allow = ["rtype.pong.empty"]
profile = "samples/profiles/reference-17byte.toml"
snapshot_hz = 60
snapshot_tolerance = 20
TOML
printf 'fail_on = "error"\n' > "$corpus/config/minimal.toml"

for t in capture_reader datagram chunks profile config; do
  echo "$t: $(ls "$corpus/$t" | wc -l) seeds, $(du -sh "$corpus/$t" | cut -f1)"
done
