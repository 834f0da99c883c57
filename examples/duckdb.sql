-- The queries of docs/parquet.md, over a dataset written by
--   rtype-inspect export captures/ --format parquet -o dataset
-- Run from the directory holding dataset/ (or set the variable to its path):
--   duckdb -c "SET VARIABLE dataset = 'dataset'" -c ".read examples/duckdb.sql"
-- Each table is read across every capture's partition; union_by_name lines up captures exported
-- with different snapshot profiles (a profile's fields are columns, null where a capture's layout
-- lacks them; `captures.profile` and `conversations.layout` name each capture's layout).

CREATE OR REPLACE VIEW datagrams AS SELECT * FROM read_parquet(getvariable('dataset') || '/datagrams/*/*.parquet', hive_partitioning = true, union_by_name = true);
CREATE OR REPLACE VIEW entities AS SELECT * FROM read_parquet(getvariable('dataset') || '/entities/*/*.parquet', hive_partitioning = true, union_by_name = true);
CREATE OR REPLACE VIEW entity_states AS SELECT * FROM read_parquet(getvariable('dataset') || '/entity_states/*/*.parquet', hive_partitioning = true, union_by_name = true);
CREATE OR REPLACE VIEW findings AS SELECT * FROM read_parquet(getvariable('dataset') || '/findings/*/*.parquet', hive_partitioning = true, union_by_name = true);
CREATE OR REPLACE VIEW conversations AS SELECT * FROM read_parquet(getvariable('dataset') || '/conversations/*/*.parquet', hive_partitioning = true, union_by_name = true);
CREATE OR REPLACE VIEW captures AS SELECT * FROM read_parquet(getvariable('dataset') || '/captures/*/*.parquet', hive_partitioning = true, union_by_name = true);

-- query: bytes_per_message_type
-- Bytes on the wire per message type, per capture.
SELECT capture, dialect, name, count(*) AS datagrams, sum(length) AS bytes
FROM datagrams
GROUP BY capture, dialect, name
ORDER BY capture, bytes DESC, name;

-- query: entity_updates_per_type_per_second
-- Entity blocks sent per entity type and second of capture, with the archetype's sprite (a block
-- without its type counts for the type its entity's spawn or an earlier update gave: `profile`'s).
SELECT e.capture, e.entity_type, min(e.sprite) AS sprite, count(*) AS updates,
       round(count(*) / max(c.duration_s), 3) AS per_second
FROM entities e JOIN captures c USING (capture)
WHERE c.duration_s > 0
GROUP BY e.capture, e.entity_type
ORDER BY e.capture, updates DESC, e.entity_type;

-- query: most_findings_of_a_rule
-- The captures with the most findings of one rule (here session.duplicate-datagram).
SELECT capture, sum(count) AS findings
FROM findings
WHERE id = 'session.duplicate-datagram'
GROUP BY capture
ORDER BY findings DESC, capture
LIMIT 10;

-- query: rtt_per_client
-- Round trips per client: each pong paired with the last ping before it in its conversation
-- with the same sequence number (rtype's server echoes it; rtnp's keep-alives have none),
-- truncated to microseconds as `rtype-inspect stats` does; nearest-rank median and p95.
WITH pings_pongs AS (
    SELECT capture, conversation, time_ns, sequence,
           name IN ('CLIENT_PING', 'PING') AS ping
    FROM datagrams
    WHERE (name IN ('CLIENT_PING', 'PING') AND direction = 'client_to_server')
       OR (name IN ('SERVER_PONG', 'PONG') AND direction = 'server_to_client')
), paired AS (
    SELECT capture, conversation, ping,
           time_ns - last_value(CASE WHEN ping THEN time_ns END IGNORE NULLS) OVER (
               PARTITION BY capture, conversation, sequence ORDER BY time_ns
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS rtt_ns
    FROM pings_pongs
), rtts AS (
    SELECT capture, conversation, (rtt_ns // 1000) / 1000.0 AS rtt_ms
    FROM paired
    WHERE NOT ping AND rtt_ns IS NOT NULL
)
SELECT r.capture, c.client, count(*) AS pairs,
       list_sort(list(r.rtt_ms))[CAST(ceil(0.5 * count(*)) AS BIGINT)] AS median_ms,
       list_sort(list(r.rtt_ms))[CAST(ceil(0.95 * count(*)) AS BIGINT)] AS p95_ms,
       max(r.rtt_ms) AS max_ms
FROM rtts r JOIN conversations c ON c.capture = r.capture AND c.id = r.conversation
GROUP BY r.capture, c.client
ORDER BY r.capture, c.client;

-- query: position_jumps
-- Entities whose position jumped further than their speed allows, per capture and entity type:
-- between two updates of one life in `entity_states`, a move longer than twice the faster of
-- the two speeds over the time between them, plus one unit (capture times jitter around the
-- server's ticks); how many such jumps, in how many lives, and the longest.
WITH states AS (
    SELECT capture, conversation, entity, life, frame, type_name, epoch_us(time) AS us,
           CAST(pos_x AS DOUBLE) AS x, CAST(pos_y AS DOUBLE) AS y,
           sqrt(CAST(vel_x AS DOUBLE) * vel_x + CAST(vel_y AS DOUBLE) * vel_y) AS speed
    FROM entity_states
    WHERE event = 'update' AND pos_x IS NOT NULL AND pos_y IS NOT NULL
      AND vel_x IS NOT NULL AND vel_y IS NOT NULL
), moves AS (
    SELECT capture, conversation, entity, life, type_name,
           sqrt((x - lag(x) OVER w) * (x - lag(x) OVER w) + (y - lag(y) OVER w) * (y - lag(y) OVER w)) AS moved,
           greatest(speed, lag(speed) OVER w) * (us - lag(us) OVER w) / 1e6 AS allowed
    FROM states
    WINDOW w AS (PARTITION BY capture, conversation, entity, life ORDER BY frame)
)
SELECT capture, type_name, count(*) AS jumps,
       count(DISTINCT concat(conversation, '/', entity, '/', life)) AS lives,
       round(max(moved), 1) AS longest
FROM moves
WHERE moved > 2 * allowed + 1
GROUP BY capture, type_name
ORDER BY capture, jumps DESC, type_name NULLS LAST;
