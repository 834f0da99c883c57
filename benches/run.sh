#!/usr/bin/env bash
# The speed benchmark of BENCHMARKS.md, in one command:
#
#   benches/run.sh
#
# Builds release, generates the captures (into $BENCH_DIR, not the repo), and measures datagrams
# per second and peak memory of the summary, `check`, `export`, `packets`, `profile` and `report`
# (the HTML page), side by side with
# the floor (benches/floor.rs: read + UDP + CRC + LZ4 + a hand-written walk, one thread), the
# floor of `export` (the same with each datagram's record written by hand: `floor --json`), `cat`,
# `tcpdump -r` and tshark running the generated Lua dissector. Prints a Markdown table, then
# the floor's passes, the stages on one thread, and the summary's stage CPU with the speed it
# predicts on more cores, and writes them to $BENCH_DIR/results.md.
#
# Settings (environment):
#   N=2000000        datagrams in the main capture
#   BIG=8000000      datagrams in the capture for the memory check (0: skip it)
#   SLICE=100000     datagrams in the slice tshark reads (it is ~1000x slower)
#   RUNS=5           timed runs per command (hyperfine; 1 run without it; tshark: 1 run)
#   BENCH_DIR=/tmp/rtype-bench
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-2000000}
BIG=${BIG:-8000000}
SLICE=${SLICE:-100000}
RUNS=${RUNS:-5}
DIR=${BENCH_DIR:-/tmp/rtype-bench}
mkdir -p "$DIR"

# Tools: Debian's tcpdump, hyperfine and tshark when missing (as .ci/run installs tshark).
missing=()
command -v tcpdump >/dev/null 2>&1 || missing+=(tcpdump)
command -v hyperfine >/dev/null 2>&1 || missing+=(hyperfine)
command -v tshark >/dev/null 2>&1 || missing+=(tshark)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || true
fi
command -v tcpdump >/dev/null 2>&1 || [ -x /usr/sbin/tcpdump ] || { echo "tcpdump is needed" >&2; exit 2; }
TCPDUMP=$(command -v tcpdump || echo /usr/sbin/tcpdump)

cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/rtype-inspect
# The floor's executable, run directly (not through cargo, whose own start-up would be timed).
FLOOR=$(cargo bench --quiet --no-run --bench floor --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "floor" and m.get("executable"):
        print(m["executable"])')
LUA=$PWD/wireshark/rtype.lua

capture() { # capture N FILE: generate once, keep for later runs
  [ -s "$2" ] || { echo "generating $1 datagrams into $2" >&2; "$BIN" generate --large "$1" --output "$2"; }
}
FILE=$DIR/large-$N.pcap
SLICE_FILE=$DIR/large-$SLICE.pcap
capture "$N" "$FILE"
capture "$SLICE" "$SLICE_FILE"

# Mean wall-clock seconds of a shell command over $RUNS runs (one warm-up run first), then its
# mean CPU seconds (user + system; on a shared machine the wall clock also counts waiting).
seconds() {
  local name=$1 cmd=$2
  if command -v hyperfine >/dev/null 2>&1; then
    hyperfine --style none --warmup 1 --runs "$RUNS" --export-json "$DIR/$name.json" "$cmd" >&2
    python3 -c 'import json,sys; r = json.load(open(sys.argv[1]))["results"][0]; print("%.4f,%.4f" % (r["mean"], r["user"] + r["system"]))' "$DIR/$name.json"
  else
    /usr/bin/time -f "%e,%U,%S" -o "$DIR/$name.time" bash -c "$cmd"
    awk -F, '{ printf "%.4f,%.4f\n", $1, $2 + $3 }' "$DIR/$name.time"
  fi
}

# Peak resident set size in MB of one run of a command (GNU time's "Maximum resident set size").
peak_mb() {
  /usr/bin/time -v -o "$DIR/time.txt" bash -c "$1" >/dev/null 2>&1 || true
  awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$DIR/time.txt"
}

# The commands. `bash -c` runs each, so that RSS is the command's (bash itself is ~4 MB and
# only waits: GNU time reports the largest process of the tree).
summary="$BIN $FILE --format json > /dev/null"
check="$BIN check $FILE > /dev/null"
export_="$BIN export $FILE -o /dev/null"
packets="$BIN packets $FILE > /dev/null"
profile="$BIN profile $FILE --format json > /dev/null"
report="$BIN report $FILE -o $DIR/report.html"
floor="$FLOOR $FILE > /dev/null"
floor_json="$FLOOR $FILE --json > /dev/null 2>&1"
cat_="cat $FILE > /dev/null"
tcpdump_="$TCPDUMP -r $FILE -n > /dev/null 2>&1"
tshark_="tshark -r $SLICE_FILE -X lua_script:$LUA > /dev/null 2>&1"

echo "timing ($RUNS runs each)..." >&2
t_summary=$(seconds summary "$summary")
t_check=$(seconds check "$check")
t_export=$(seconds export "$export_")
t_packets=$(seconds packets "$packets")
t_profile=$(seconds profile "$profile")
t_report=$(seconds report "$report")
t_floor=$(seconds floor "$floor")
t_floor_json=$(seconds floor_json "$floor_json")
t_cat=$(seconds cat "$cat_")
t_tcpdump=$(seconds tcpdump "$tcpdump_")
# tshark takes minutes on the slice: one run, timed and measured at once.
/usr/bin/time -f "%e %U %S %M" -o "$DIR/tshark.time" bash -c "$tshark_"
t_tshark=$(awk '{ printf "%.4f,%.4f", $1, $2 + $3 }' "$DIR/tshark.time")
m_tshark=$(awk '{ printf "%.1f", $4 / 1024 }' "$DIR/tshark.time")

# Export writes one record per datagram, reassembled snapshot, loose finding and conversation,
# plus the capture and summary records: count them once.
records=$("$BIN" export "$FILE" -o - | wc -l)

echo "peak memory..." >&2
m_summary=$(peak_mb "$summary"); m_check=$(peak_mb "$check")
m_export=$(peak_mb "$export_"); m_packets=$(peak_mb "$packets"); m_floor=$(peak_mb "$floor")
m_profile=$(peak_mb "$profile"); m_report=$(peak_mb "$report")
m_floor_json=$(peak_mb "$floor_json")
m_tcpdump=$(peak_mb "$tcpdump_")
if [ "$BIG" -gt 0 ]; then
  BIG_FILE=$DIR/large-$BIG.pcap
  capture "$BIG" "$BIG_FILE"
  b_summary=$(peak_mb "${summary//$FILE/$BIG_FILE}"); b_check=$(peak_mb "${check//$FILE/$BIG_FILE}")
  b_export=$(peak_mb "${export_//$FILE/$BIG_FILE}"); b_packets=$(peak_mb "${packets//$FILE/$BIG_FILE}")
  b_floor=$(peak_mb "${floor//$FILE/$BIG_FILE}")
  b_profile=$(peak_mb "${profile//$FILE/$BIG_FILE}"); b_report=$(peak_mb "${report//$FILE/$BIG_FILE}")
else
  b_summary=-; b_check=-; b_export=-; b_packets=-; b_floor=-; b_profile=-; b_report=-
fi

python3 - "$N" "$SLICE" "$BIG" "$records" "$(stat -L -c %s "$FILE")" <<EOF | tee "$DIR/results.md"
import sys
n, slice_, big, records, size = (int(a) for a in sys.argv[1:])
timed = dict(summary=($t_summary), check=($t_check), export=($t_export), packets=($t_packets),
             profile=($t_profile), report=($t_report), floor=($t_floor), floor_json=($t_floor_json), cat=($t_cat), tcpdump=($t_tcpdump),
             tshark=($t_tshark))
t = {k: v[0] for k, v in timed.items()}
cpu = {k: v[1] for k, v in timed.items()}
rate = {k: n / v for k, v in t.items()}
rate["tshark"] = slice_ / t["tshark"]
# CPU seconds per datagram, for the ratio to the floor (tshark's over its slice).
cpu_per = {k: v / (slice_ if k == "tshark" else n) for k, v in cpu.items()}
mem = dict(summary="$m_summary", check="$m_check", export="$m_export", packets="$m_packets",
           profile="$m_profile", report="$m_report", floor="$m_floor", floor_json="$m_floor_json", tcpdump="$m_tcpdump", tshark="$m_tshark",
           cat="-")
big_mem = dict(summary="$b_summary", check="$b_check", export="$b_export", packets="$b_packets",
               profile="$b_profile", report="$b_report", floor="$b_floor")
print(f"{n:,} datagrams ({size / 1e6:.0f} MB pcap); tshark on a {slice_:,}-datagram slice; "
      f"peak RSS also at {big:,} datagrams\n")
print("| command | wall s | CPU s | datagrams/s | vs cat | vs tcpdump -r | vs tshark + Lua | CPU/datagram vs floor | peak RSS MB | at %s |" % f"{big:,}")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
labels = dict(summary="summary --format json", check="check", export="export -o /dev/null",
              packets="packets > /dev/null", profile="profile --format json",
              report="report (HTML page)", floor="floor (read + UDP + CRC + LZ4 + walk)",
              floor_json="floor of export (the floor + each record by hand)",
              cat="cat > /dev/null", tcpdump="tcpdump -r -n",
              tshark="tshark -X lua_script (slice)")
def per_s(r):
    return f"{r / 1e6:.2f} M" if r >= 1e6 else f"{r / 1e3:.1f} k" if r >= 1e3 else f"{r:.0f}"
for k in ["summary", "check", "export", "packets", "profile", "report", "floor", "floor_json", "cat",
          "tcpdump", "tshark"]:
    r = rate[k]
    print(f"| {labels[k]} | {t[k]:.3f} | {cpu[k]:.3f} | {per_s(r)} | {r / rate['cat']:.3f}x | "
          f"{r / rate['tcpdump']:.1f}x | {r / rate['tshark']:.0f}x | "
          f"{cpu_per[k] / cpu_per['floor']:.2f}x | {mem[k]} | {big_mem.get(k, '')} |")
print(f"\nexport: {records:,} records, {per_s(records / t['export'])} records/s "
      f"({per_s(records / cpu['export'])} per CPU second); CPU per record "
      f"{cpu['export'] / cpu['floor_json']:.2f}x the floor of export's")
rows = ["summary", "check", "export", "packets", "profile", "report", "floor", "tcpdump"]
print("datagrams per CPU second: " + ", ".join(f"{k} {per_s(n / cpu[k])}" for k in rows))
print("CPU ns per datagram: " + ", ".join(f"{k} {cpu_per[k] * 1e9:.0f}" for k in rows))
EOF

# The floor's own account: what it counted, and the CPU of each of 5 passes in one process.
echo >&2 "floor..."
{
  echo
  echo "The floor, one thread, 5 passes (\`cargo bench --bench floor -- FILE --runs 5\`):"
  echo
  echo '```'
  "$FLOOR" "$FILE" --runs 5
  echo '```'
} | tee -a "$DIR/results.md"

# Where the decoding time goes, stage by stage, in one thread (benches/stages.rs).
echo >&2 "stages..."
{
  echo
  echo "Stages, one thread, best of 3 (\`cargo bench --bench stages -- FILE\`):"
  echo
  echo '```'
  cargo bench --quiet --bench stages -- "$FILE" 2>/dev/null
  echo '```'
} | tee -a "$DIR/results.md"

# The summary's CPU per stage on the default threads, and the speed it predicts on more cores
# (RTYPE_INSPECT_STAGE_CPU; BENCHMARKS.md, "How a capture is read").
echo >&2 "stage CPU..."
{
  echo
  echo "Stages and the speed predicted on more cores (\`RTYPE_INSPECT_STAGE_CPU=1\`, the summary):"
  echo
  echo '```'
  RTYPE_INSPECT_STAGE_CPU=1 "$BIN" "$FILE" --format json -q 2>&1 >/dev/null
  echo '```'
} | tee -a "$DIR/results.md"
