"""Runs examples/duckdb.sql's queries over a dataset with DuckDB and prints their results as
JSON ({query: [row, ...]}), for tests/parquet_engines.rs."""

import json
import re
import sys

import duckdb

dataset, sql_file = sys.argv[1], sys.argv[2]
con = duckdb.connect()
con.execute("SET VARIABLE dataset = ?", [dataset])
parts = re.split(r"^-- query: (\w+)\n", open(sql_file).read(), flags=re.M)
con.execute(parts[0])
results = {}
for name, sql in zip(parts[1::2], parts[2::2]):
    rel = con.sql(sql)
    results[name] = [dict(zip(rel.columns, row)) for row in rel.fetchall()]
json.dump(results, sys.stdout, default=str)
