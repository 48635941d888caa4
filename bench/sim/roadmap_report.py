"""Prints the Markdown tables of the roadmap scenarios from bench/sim/roadmap.sh's raw
outputs (JSON and CSV in the directory named on the command line), and, given an image
directory as the second argument, renders their FCT plots there (gnuplot), each with the
Markdown line that shows it."""
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_report import Plots  # noqa: E402  (one plotting helper for both reports)

out = sys.argv[1]
img_dir = sys.argv[2] if len(sys.argv) > 2 else None
def runs(i):
    return json.load(open(os.path.join(out, i + ".json")))["runs"]
def f(x, d=1):
    return f"{x:,.{d}f}"
def drops(r):
    return r["network_drops"]["total"]
print("| run | transport | flows done | FCT p50 us | FCT p99 us | FCT max us | algbw Gbit/s | goodput Gbit/s | drops | retransmits | max long-haul queue B |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for i in ["sa-1ms", "sa-10ms", "sa-1ms-iw16m", "sa-1ms-up", "sa-10ms-up", "sa-1ms-up-16",
          "sa-10ms-up-16", "a2a-1ms", "kv"]:
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
    r = runs(f"one-{d}-mroce-grow")[0]["workloads"][0]
    print(f"| {d} | mroce | 16 x 256, opening up to 256 paths | - | {f(r['fct']['max_us'])} | {f(r['goodput_gbps'])} |")
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


def fcts(i):
    """FCTs in us of the completed flows of run i, by transport, from its flows.csv."""
    by = {}
    with open(os.path.join(out, i, "flows.csv")) as fh:
        for row in csv.DictReader(fh):
            if row.get("status", "ok") == "ok":
                by.setdefault(row["transport"], []).append(float(row["fct_us"]))
    return {t: sorted(v) for t, v in by.items()}


if img_dir:
    plots = Plots(img_dir)
    names = {"mroce": "MetaRoCE", "roce": "RoCEv2"}
    print()
    for i, title in [("kv", "kv-cache: READ FCT CDF"),
                     ("sa-1ms", "scale-across, 1 ms one way: ring all-reduce FCT CDF"),
                     ("a2a-1ms", "scale-across all-to-all, 1 ms: FCT CDF")]:
        series = fcts(i)
        files = [(plots.data(f"roadmap_{i}_{t}.dat",
                             [(x, (k + 1) / len(v)) for k, x in enumerate(v)]), names.get(t, t))
                 for t, v in sorted(series.items())]
        img = plots.render(f"sim-roadmap-{i}-fct.png", (
            f"set title '{title}'\nset xlabel 'FCT (us)'\nset logscale x\n"
            "set ylabel 'fraction of flows'\nset key bottom right\n"
            "plot " + ", ".join(f"'{f}' w l lw 2 t '{n}'" for f, n in files) + "\n"))
        print(f"![{title}]({img})")
        print()
