#!/usr/bin/env bash
# Every output of every sample and real capture, written into one folder, so that two builds can
# be compared byte for byte (`diff -r`): a change that means to alter no output must show none,
# and one that does shows exactly what it changed.
#
#   benches/outputs.sh BIN OUTDIR        e.g. target/release/rtype-inspect /tmp/outputs-before
#   diff -r /tmp/outputs-before /tmp/outputs-after
#
# Captures: samples/*.pcap* and the real captures (../shared/captures, else tests/fixtures).
# Commands: the summary (text and JSON), check (text and JUnit), packets (list, -V), stats,
# profile (JSON), export (NDJSON), each with --threads 1 so that the comparison is exact.
set -euo pipefail
bin=$(realpath "${1:?usage: benches/outputs.sh BIN OUTDIR}")
out=${2:?usage: benches/outputs.sh BIN OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
real=../shared/captures
[ -d "$real" ] || real=tests/fixtures
captures=$(ls samples/*.pcap samples/*.pcapng samples/*.pcap.gz 2>/dev/null; find "$real" -name '*.pcap' | sort)
run() {
  local name=$1
  shift
  # The exit status is part of the output: check fails by design on some captures.
  { "$bin" "$@" 2>&1; echo "exit $?"; } >"$out/$name" || true
}
for capture in $captures; do
  base=$(basename "$capture")
  run "$base.summary.txt" --threads 1 --color never "$capture"
  run "$base.summary.json" --threads 1 --format json "$capture"
  run "$base.check.txt" check --threads 1 --color never "$capture"
  run "$base.check.junit" check --threads 1 --format junit "$capture"
  run "$base.packets.txt" packets --threads 1 --color never "$capture"
  run "$base.packets-V.txt" packets --threads 1 --color never -V "$capture"
  run "$base.stats.txt" stats --threads 1 --color never "$capture"
  run "$base.profile.json" profile --threads 1 --format json "$capture"
  run "$base.export.ndjson" export --threads 1 "$capture" -o -
done
ls "$out" | wc -l | xargs echo "outputs written to $out:"
