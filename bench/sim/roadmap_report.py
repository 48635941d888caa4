"""Prints the Markdown tables of the roadmap scenarios from bench/sim/roadmap.sh's raw
outputs (JSON and CSV in the directory named on the command line)."""
import csv
import json
import os
import sys

out = sys.argv[1]
def runs(i):
    return json.load(open(os.path.join(out, i + ".json")))["runs"]
def f(x, d=1):
    return f"{x:,.{d}f}"
def drops(r):
    return r["network_drops"]["total"]
print("| run | transport | flows done | FCT p50 us | FCT p99 us | FCT max us | algbw Gbit/s | goodput Gbit/s | drops | retransmits | max long-haul queue B |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for i in ["sa-1ms", "sa-10ms", "sa-1ms-iw16m", "a2a-1ms", "kv"]:
    for r in runs(i):
        w = r["workloads"][0]
        lh = r["links"].get("core>core", {}).get("max_queue_bytes", "-")
        print(f"| `{i}` | {r['transport']} | {w['completed']}/{w['flows']} | {f(w['fct']['p50_us'])} | "
              f"{f(w['fct']['p99_us'])} | {f(w['fct']['max_us'])} | {f(w['algbw_gbps']) if 'algbw_gbps' in w else '-'} | "
              f"{f(w['goodput_gbps'])} | {drops(r)} | {r['transport_counters']['tx_retransmits']} | {lh} |")
print()
print("| one-way delay | transport | paths x window | window over RTT, Gbit/s | FCT us | goodput Gbit/s |")
print("| --- | --- | --- | --- | --- | --- |")
for d, rtt in [("1ms", 2.012e-3), ("10ms", 20.012e-3)]:
    r = runs(f"one-{d}-roce")[0]["workloads"][0]
    print(f"| {d} | roce | - | - | {f(r['fct']['max_us'])} | {f(r['goodput_gbps'])} |")
    for pw in ["16-128", "16-256", "64-256", "256-256"]:
        p, wn = map(int, pw.split("-"))
        bound = min(p * wn * (4096 + 64), 64 << 20) * 8 / rtt / 1e9
        r = runs(f"one-{d}-mroce-{pw}")[0]["workloads"][0]
        print(f"| {d} | mroce | {p} x {wn} | {f(min(bound, 100))} | {f(r['fct']['max_us'])} | {f(r['goodput_gbps'])} |")
print()
print("| transport | READ size | READs | FCT p50 us | FCT p99 us | FCT max us |")
print("| --- | --- | --- | --- | --- | --- |")
by = {}
with open(os.path.join(out, "kv", "flows.csv")) as fh:
    for row in csv.DictReader(fh):
        by.setdefault((row["transport"], int(row["bytes"])), []).append(float(row["fct_us"]))
def rank(v, q):
    v = sorted(v)
    return v[min(len(v), max(1, int(q * len(v) + 0.999999))) - 1]
for (t, b), v in sorted(by.items()):
    print(f"| {t} | {b // 1024:,} KiB | {len(v)} | {f(rank(v, 0.5))} | {f(rank(v, 0.99))} | {f(max(v))} |")
