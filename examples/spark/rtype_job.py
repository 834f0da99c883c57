"""Fleet-scale analysis of R-Type captures on Spark.

Each executor runs `rtype-inspect export CAPTURE --format parquet -o DATASET` on its share of
the captures (the binary is a step of the job), every capture landing in its own Hive partition
(`DATASET/<table>/capture=<NAME>/`) of one dataset; the driver then reads the dataset as tables
and runs the queries of docs/parquet.md. See README.md beside this file for spark-submit.

    python3 rtype_job.py --dataset /shared/rtype-dataset --results results.json captures/*.pcap
"""

import argparse
import json
import os
import stat
import subprocess
import sys

from pyspark import SparkFiles
from pyspark.sql import SparkSession

# The tables the queries read.
TABLES = ["datagrams", "entities", "entity_states", "findings", "conversations", "captures"]

# The queries of docs/parquet.md (examples/duckdb.sql) in Spark SQL: the same results, in
# Spark's dialect (element_at for a sorted list's rank, `last(x, true)` for IGNORE NULLS, `div`).
QUERIES = {
    "bytes_per_message_type": """
        SELECT capture, dialect, name, count(*) AS datagrams, sum(length) AS bytes
        FROM datagrams
        GROUP BY capture, dialect, name
        ORDER BY capture, bytes DESC, name""",
    "entity_updates_per_type_per_second": """
        SELECT e.capture, e.entity_type, min(e.sprite) AS sprite, count(*) AS updates,
               round(count(*) / max(c.duration_s), 3) AS per_second
        FROM entities e JOIN captures c ON c.capture = e.capture
        WHERE c.duration_s > 0
        GROUP BY e.capture, e.entity_type
        ORDER BY e.capture, updates DESC, e.entity_type""",
    "most_findings_of_a_rule": """
        SELECT capture, sum(count) AS findings
        FROM findings
        WHERE id = 'session.duplicate-datagram'
        GROUP BY capture
        ORDER BY findings DESC, capture
        LIMIT 10""",
    "rtt_per_client": """
        WITH pings_pongs AS (
            SELECT capture, conversation, time_ns, sequence,
                   name IN ('CLIENT_PING', 'PING') AS ping
            FROM datagrams
            WHERE (name IN ('CLIENT_PING', 'PING') AND direction = 'client_to_server')
               OR (name IN ('SERVER_PONG', 'PONG') AND direction = 'server_to_client')
        ), paired AS (
            SELECT capture, conversation, ping,
                   time_ns - last(CASE WHEN ping THEN time_ns END, true) OVER (
                       PARTITION BY capture, conversation, sequence ORDER BY time_ns
                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS rtt_ns
            FROM pings_pongs
        ), rtts AS (
            SELECT capture, conversation, CAST(rtt_ns div 1000 AS DOUBLE) / 1000 AS rtt_ms
            FROM paired
            WHERE NOT ping AND rtt_ns IS NOT NULL
        )
        SELECT r.capture, c.client, count(*) AS pairs,
               element_at(sort_array(collect_list(r.rtt_ms)),
                          CAST(ceil(0.5 * count(*)) AS INT)) AS median_ms,
               element_at(sort_array(collect_list(r.rtt_ms)),
                          CAST(ceil(0.95 * count(*)) AS INT)) AS p95_ms,
               max(r.rtt_ms) AS max_ms
        FROM rtts r JOIN conversations c ON c.capture = r.capture AND c.id = r.conversation
        GROUP BY r.capture, c.client
        ORDER BY r.capture, c.client""",
    "position_jumps": """
        WITH states AS (
            SELECT capture, conversation, entity, life, frame, type_name, unix_micros(time) AS us,
                   CAST(pos_x AS DOUBLE) AS x, CAST(pos_y AS DOUBLE) AS y,
                   sqrt(CAST(vel_x AS DOUBLE) * vel_x + CAST(vel_y AS DOUBLE) * vel_y) AS speed
            FROM entity_states
            WHERE event = 'update' AND pos_x IS NOT NULL AND pos_y IS NOT NULL
              AND vel_x IS NOT NULL AND vel_y IS NOT NULL
        ), moves AS (
            SELECT capture, conversation, entity, life, type_name,
                   sqrt((x - lag(x) OVER w) * (x - lag(x) OVER w)
                        + (y - lag(y) OVER w) * (y - lag(y) OVER w)) AS moved,
                   greatest(speed, lag(speed) OVER w) * (us - lag(us) OVER w) / 1e6 AS allowed
            FROM states
            WINDOW w AS (PARTITION BY capture, conversation, entity, life ORDER BY frame)
        )
        SELECT capture, type_name, count(*) AS jumps,
               count(DISTINCT conversation, entity, life) AS lives,
               round(max(moved), 1) AS longest
        FROM moves
        WHERE moved > 2 * allowed + 1
        GROUP BY capture, type_name
        ORDER BY capture, jumps DESC, type_name NULLS LAST""",
}


def binary_path(binary):
    """The rtype-inspect to run on this executor: a path it has, else the file shipped with
    spark-submit --files (made executable: Spark does not keep the mode)."""
    if os.path.isfile(binary):
        return binary
    shipped = SparkFiles.get(os.path.basename(binary))
    if os.path.isfile(shipped):
        mode = os.stat(shipped).st_mode
        os.chmod(shipped, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return shipped
    return binary  # on the executors' PATH


def export_partition(captures, binary, dataset, profile):
    """Runs on an executor: one export per capture, each into its own partition."""
    exe = binary_path(binary)
    for capture in captures:
        args = [exe, "export", capture, "--format", "parquet", "-o", dataset, "--threads", "1",
                "--quiet"]
        if profile:
            args += ["--profile", profile]
        done = subprocess.run(args, capture_output=True, text=True)
        yield (capture, done.returncode, done.stderr.strip())


def run_queries(spark, dataset):
    """Reads the dataset's tables across every capture's partition and runs the queries."""
    for table in TABLES:
        (spark.read.option("mergeSchema", "true")
         .parquet(os.path.join(dataset, table))
         .createOrReplaceTempView(table))
    return {name: [row.asDict() for row in spark.sql(sql).collect()]
            for name, sql in QUERIES.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("captures", nargs="+",
                        help="capture files, or @FILE for a file listing one path a line")
    parser.add_argument("--dataset", required=True,
                        help="the dataset's directory, seen alike by the driver and executors")
    parser.add_argument("--binary", default="rtype-inspect",
                        help="rtype-inspect on the executors (a path, a name shipped with "
                             "--files, or on PATH)")
    parser.add_argument("--profile", help="snapshot profile (a bundled name or a TOML file)")
    parser.add_argument("--results", help="write the queries' results here as JSON")
    args = parser.parse_args()

    captures = []
    for c in args.captures:
        if c.startswith("@"):
            with open(c[1:]) as listing:
                captures += [line.strip() for line in listing if line.strip()]
        else:
            captures.append(c)
    # Each capture's partition is named after its file: two files of one name would overwrite
    # each other's.
    names = {}
    for c in captures:
        other = names.setdefault(os.path.basename(c), c)
        if other != c:
            sys.exit(f"{other} and {c} have the same name: their partitions would collide")

    spark = (SparkSession.builder.appName("rtype-inspect")
             # `capture=17.pcap` stays text, whatever a capture is called.
             .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    exports = (spark.sparkContext
               .parallelize(captures, max(1, len(captures)))
               .mapPartitions(lambda it: export_partition(it, args.binary, args.dataset,
                                                          args.profile))
               .collect())
    failed = [(c, err) for c, code, err in exports if code != 0]
    for capture, err in failed:
        print(f"{capture}: {err}", file=sys.stderr)

    results = run_queries(spark, args.dataset)
    for name, rows in results.items():
        print(f"-- {name}")
        for row in rows:
            print(row)
    if args.results:
        with open(args.results, "w") as out:
            json.dump(results, out, indent=1, default=str)
    spark.stop()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
