#!/usr/bin/env bash
# bench/net/threads.sh: how the stack's loopback WRITE bandwidth scales with its threads
# per device (DeviceOptions::progress_threads, mroce-perf --progress-threads), side by
# side with the raw UDP GSO/GRO blaster in the same rounds. Each round runs the blaster,
# then mroce-perf once per thread count (the order rotates from round to round), both
# ends with the same count; perf stat gives each process's CPU time (user and kernel, all
# threads). Prints one line per run and a Markdown table.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
repeat=3
seconds=4
threads="1 2 4"
out=""

usage() {
  cat <<'EOF'
usage: bench/net/threads.sh [--build DIR] [--repeat N] [--seconds S] [--threads "1 2 4"]
                            [--out FILE]
  --build DIR     build tree with mroce-perf and mroce-udp-blaster (default: build)
  --repeat N      rounds (default 3)
  --seconds S     length of each run (default 4)
  --threads LIST  thread counts to compare, each 1..16 (default "1 2 4")
  --out FILE      also write the table to FILE
EOF
}
die() {
  echo "threads.sh: $*" >&2
  exit 2
}

while (($#)); do
  case $1 in
    --build | --repeat | --seconds | --threads | --out)
      (($# >= 2)) || die "option '$1' needs a value"
      case $1 in
        --build) build=$2 ;;
        --repeat) repeat=$2 ;;
        --seconds) seconds=$2 ;;
        --threads) threads=$2 ;;
        --out) out=$2 ;;
      esac
      shift 2
      ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive whole number"
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "--seconds must be a positive whole number"
read -r -a counts <<<"$threads"
((${#counts[@]})) || die "--threads needs at least one count"
for t in "${counts[@]}"; do
  if ! [[ $t =~ ^[0-9]+$ ]] || ((t < 1 || t > 16)); then die "--threads: '$t' must be 1..16"; fi
done
perf=$build/tools/perf/mroce-perf
blaster=$build/bench/net/mroce-udp-blaster
[[ -x $perf && -x $blaster ]] || die "no mroce-perf or mroce-udp-blaster in $build"
command -v perf >/dev/null || die "perf is missing (scripts/install-deps.sh installs it)"

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
cpu() {
  local file=$1
  shift
  perf stat -x, -e task-clock -o "$file" -- "$@"
}

size=$((4096 + 56))  # a WRITE datagram: 56 bytes of MetaRoCE headers, 4096 of payload
for ((r = 1; r <= repeat; r++)); do
  cut -d' ' -f1 /proc/loadavg >"$work/load-$r"
  cpu "$work/raw-$r.recv-cpu" "$blaster" recv >"$work/raw-$r.out" &
  rx=$!
  for _ in $(seq 50); do [[ -s $work/raw-$r.out ]] && break; sleep 0.05; done
  cpu "$work/raw-$r.send-cpu" "$blaster" send --to 127.0.0.1 \
    --port "$(head -n 1 "$work/raw-$r.out")" --size "$size" --gso 15 --seconds "$seconds" >/dev/null
  wait "$rx"
  tail -n 1 "$work/raw-$r.out" >"$work/raw-$r.json"
  n=${#counts[@]}
  for ((i = 0; i < n; i++)); do
    t=${counts[$(((i + r - 1) % n))]}
    f=$work/mroce-$t-$r
    port=$(free_port)
    cpu "$f.server-cpu" "$perf" server --once --port 0 --tcp-port "$port" --rate 100000 \
      --progress-threads "$t" >/dev/null 2>&1 &
    server_pid=$!
    cpu "$f.client-cpu" "$perf" client 127.0.0.1 --tcp-port "$port" -s 65536 -D "$seconds" \
      --rate 100000 --progress-threads "$t" --json "$f.json" >/dev/null ||
      echo "threads.sh: mroce-perf with $t threads failed in round $r" >&2
    wait "$server_pid" || true
    server_pid=""
  done
done

/usr/bin/python3 - "$work" "$repeat" "$seconds" "$out" "${counts[@]}" <<'EOF'
import json, statistics, sys

work, repeat, seconds, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
counts = [int(c) for c in sys.argv[5:]]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def cpu_ms(path):
    try:
        with open(path) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[2].startswith("task-clock"):
                    return float(fields[0])
    except (OSError, ValueError):
        pass
    return None

def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)

rows = {c: [] for c in counts}
raw = []
for r in range(1, repeat + 1):
    x = load(f"{work}/raw-{r}.json")
    xg = x["gbit_s"] if x else None
    xs = x["seconds"] if x else None
    raw.append((xg, cpu_ms(f"{work}/raw-{r}.send-cpu"), cpu_ms(f"{work}/raw-{r}.recv-cpu"), xs))
    load_avg = open(f"{work}/load-{r}").read().strip()
    print(f"round {r} (load {load_avg}): raw UDP {fmt(xg)} Gbit/s")
    for c in counts:
        m = load(f"{work}/mroce-{c}-{r}.json")
        g = m["results"][0]["gbit_s"] if m else None
        s = m["results"][0]["seconds"] if m else None
        cc, sc = cpu_ms(f"{work}/mroce-{c}-{r}.client-cpu"), cpu_ms(f"{work}/mroce-{c}-{r}.server-cpu")
        rows[c].append((g, xg, cc, sc, s))
        print(f"  {c} thread(s): {fmt(g)} Gbit/s, ratio {fmt(g / xg if g and xg else None)}, "
              f"CPU client {fmt(cc, '.0f')} ms server {fmt(sc, '.0f')} ms")

def med(v):
    v = [a for a in v if a is not None]
    return statistics.median(v) if v else None

lines = [
    "| threads per device | Gbit/s (each round) | median | of raw UDP (median of rounds) "
    "| CPU, cores busy: client | server | ns of CPU per KiB: client | server |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
]
for c in counts:
    v = rows[c]
    gs = [a[0] for a in v]
    ratios = [a[0] / a[1] if a[0] and a[1] else None for a in v]
    # CPU time against the run's length: the client's process lives for the test plus
    # set-up; the server's from start to its last byte, so these are upper bounds.
    busy_c = [a[2] / 1000 / seconds if a[2] else None for a in v]
    busy_s = [a[3] / 1000 / seconds if a[3] else None for a in v]
    per_kib = lambda ms, g, s: ms * 1e6 / (g * 1e9 / 8 * s / 1024) if ms and g and s else None
    nc = [per_kib(a[2], a[0], a[4]) for a in v]
    ns = [per_kib(a[3], a[0], a[4]) for a in v]
    lines.append(f"| {c} | {', '.join(fmt(g) for g in gs)} | {fmt(med(gs))} | {fmt(med(ratios))} "
                 f"| {fmt(med(busy_c))} | {fmt(med(busy_s))} | {fmt(med(nc), '.0f')} "
                 f"| {fmt(med(ns), '.0f')} |")
xg = [a[0] for a in raw]
per_kib_raw = lambda ms, g, s: ms * 1e6 / (g * 1e9 / 8 * s / 1024) if ms and g and s else None
lines.append(f"| raw UDP blaster | {', '.join(fmt(g) for g in xg)} | {fmt(med(xg))} | 1 "
             f"| {fmt(med([a[1] / 1000 / seconds if a[1] else None for a in raw]))} "
             f"| {fmt(med([a[2] / 1000 / seconds if a[2] else None for a in raw]))} "
             f"| {fmt(med([per_kib_raw(a[1], a[0], a[3]) for a in raw]), '.0f')} "
             f"| {fmt(med([per_kib_raw(a[2], a[0], a[3]) for a in raw]), '.0f')} |")
table = "\n".join(lines)
print()
print(table)
if out:
    with open(out, "w") as f:
        f.write(table + "\n")
EOF
