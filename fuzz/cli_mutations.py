#!/usr/bin/env python3
"""Mutates the sample and real captures and runs the rtype-inspect binary's commands on them.

    fuzz/cli_mutations.py [RUNS] [SEED]      (defaults: 10000 runs, a random seed)

Where the cargo-fuzz targets drive the library, this drives the shipped binary: its argument
handling, every report and output format (text, JSON, Parquet, HTML), display filters, one
thread and several. A run fails on an exit code other than 0, 1 and 2 (a panic exits with 101),
a signal, "panicked" on stderr, or 60 seconds without an end; its input and command are kept in
fuzz/artifacts/cli/. Needs a release build (cargo build --release).
"""
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, 'target', 'release', 'rtype-inspect')
KEPT = os.path.join(ROOT, 'fuzz', 'artifacts', 'cli')
SEEDS = [os.path.join(d, f) for d in ('samples', 'tests/fixtures')
         for f in sorted(os.listdir(os.path.join(ROOT, d))) if '.pcap' in f]

# Each command with the capture in its place: `{}` is the capture, `{out}` a scratch output.
COMMANDS = [
    ['{}'], ['{}', '--format', 'json'], ['{}', '--threads', '1', '--format', 'json'],
    ['check', '{}'], ['packets', '{}', '-V'], ['packets', '{}', '-x'],
    ['packets', '{}', '-T', 'fields', '-e', 'frame.time_delta', '-e', 'udp.length',
     '-e', 'rtype.snapshot.entity.pos_x'],
    ['packets', '{}', '-Y', 'rtype.snapshot.entity.id == 3 || udp.length > 200 || rt || rtnp'],
    ['export', '{}', '-o', '-'],
    ['export', '{}', '-o', '-', '-Y', 'rtype.msg_type in {20, 21} && frame.time_delta < 0.01'],
    ['export', '{}', '--format', 'parquet', '-o', '{out}'],
    ['stats', '{}'], ['profile', '{}', '--format', 'json'], ['report', '{}', '-o', '{out}.html'],
]


def mutate(rng, data):
    """One to eight byte-level mutations: bit flips, special bytes and 32-bit values, deletions,
    insertions of random bytes, a cut, and copies of the file's own bytes spliced in."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if not b:
            break
        i, k = rng.randrange(len(b)), rng.random()
        if k < 0.4:
            b[i] ^= 1 << rng.randrange(8)
        elif k < 0.55:
            b[i] = rng.choice([0, 0xff, 0x7f, 0x80, 1])
        elif k < 0.65:
            v = rng.choice([0, 0xffffffff, 0x7fffffff, 65535, 65536, 1 << 24])
            b[i:i + 4] = v.to_bytes(4, rng.choice(['little', 'big']))
        elif k < 0.75:
            del b[i:i + rng.randint(1, 64)]
        elif k < 0.85:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        elif k < 0.9:
            del b[i:]
        else:
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 256)]
    return bytes(b)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else time.time_ns()
    rng = random.Random(seed)
    seeds = [(path, open(os.path.join(ROOT, path), 'rb').read()) for path in SEEDS]
    scratch = tempfile.mkdtemp(prefix='rtype-cli-fuzz-')
    print(f'{runs} runs, seed {seed}, {len(seeds)} captures', flush=True)
    failures = 0
    for n in range(runs):
        name, data = rng.choice(seeds)
        case = os.path.join(scratch, 'case.pcap' + ('.gz' if name.endswith('.gz') else ''))
        mutated = mutate(rng, data)
        with open(case, 'wb') as f:
            f.write(mutated)
        out = os.path.join(scratch, 'out')
        argv = [BIN] + [a.replace('{out}', out).replace('{}', case) for a in rng.choice(COMMANDS)]
        try:
            r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
            failed = r.returncode not in (0, 1, 2) or b'panicked' in r.stderr
            why = f'exit {r.returncode}: {r.stderr[-400:]!r}'
        except subprocess.TimeoutExpired:
            failed, why = True, 'no end after 60 s'
        if failed:
            failures += 1
            os.makedirs(KEPT, exist_ok=True)
            kept = os.path.join(KEPT, f'{seed}-{n}')
            with open(kept + os.path.splitext(case)[1], 'wb') as f:
                f.write(mutated)
            with open(kept + '.txt', 'w') as f:
                f.write(f'{name}\n{argv[1:]}\n{why}\n')
            print(f'FAIL {name} {argv[1:]} {why}', flush=True)
        if n % 1000 == 0:
            print(f'run {n}, {failures} failures', flush=True)
    print(f'{runs} runs, {failures} failures')
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
