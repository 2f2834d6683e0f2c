#!/usr/bin/env python3
"""Writes bench/bigsnap.json: the ctx128 corpus snapshot with its segments
and trace entries repeated twice (~95 MB of JSON, frames included), for the
memory-snapshot benchmark in RESULTS.md."""
import gzip, json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
src = os.path.join(here, "..", "..", "shared", "corpus", "memsnap", "ctx128_forward_memory_snapshot.json.gz")
d = json.load(gzip.open(src, "rt"))
d["segments"] = d["segments"] * 2
d["device_traces"] = [t * 2 for t in d["device_traces"]]
out = os.path.join(here, "bigsnap.json")
with open(out, "w") as f:
    json.dump(d, f)
print(out, os.path.getsize(out), "bytes")
