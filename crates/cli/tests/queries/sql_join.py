"""Run one SQL query on DuckDB over log records in a table shaped like the OpenTelemetry
collector's ClickHouse exporter's `otel_logs`.

argv[1]: the query. Stdin: a JSON list of {"timestamp_ns", "service", "attributes"}.
Prints the result rows as a JSON list of lists of strings.
"""
import json
import sys

import duckdb

con = duckdb.connect()
con.execute(
    "CREATE TABLE otel_logs (Timestamp TIMESTAMP_NS, ServiceName VARCHAR, "
    "LogAttributes MAP(VARCHAR, VARCHAR))"
)
for r in json.load(sys.stdin):
    a = r["attributes"]
    con.execute(
        "INSERT INTO otel_logs VALUES (make_timestamp_ns(?), ?, MAP(?, ?))",
        [r["timestamp_ns"], r["service"], list(a.keys()), list(a.values())],
    )
rows = con.execute(sys.argv[1]).fetchall()
json.dump([[str(c) for c in row] for row in rows], sys.stdout)
