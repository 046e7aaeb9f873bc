"""Name instruments the way the OpenTelemetry Python SDK's Prometheus exporter does.

Reads a JSON list of {"name", "unit", "kind"} (kind: counter, histogram, gauge) on stdin,
records one point on each instrument, and prints the Prometheus text exposition of them:
an implementation of the OTLP-to-Prometheus naming that is not ours.
"""
import json
import sys

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import REGISTRY, generate_latest

reader = PrometheusMetricReader()
meter = MeterProvider(metric_readers=[reader]).get_meter("agent-watchdog")
for m in json.load(sys.stdin):
    if m["kind"] == "counter":
        meter.create_counter(m["name"], unit=m["unit"]).add(1)
    elif m["kind"] == "histogram":
        meter.create_histogram(m["name"], unit=m["unit"]).record(1.0)
    elif m["kind"] == "gauge":
        meter.create_gauge(m["name"], unit=m["unit"]).set(1.0)
    else:
        sys.exit(f"unknown kind {m['kind']!r}")
sys.stdout.write(generate_latest(REGISTRY).decode())
