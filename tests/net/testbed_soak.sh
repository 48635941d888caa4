#!/usr/bin/env bash
# Fail/heal soak on the 4-spine testbed (1 Gbit/s per spine port) at 2% random loss on
# every spine: one WRITE transfer for 10 minutes (SOAK_SECONDS) while, every 30 s, a
# spine is black-holed and then healed, in turn. At the end: byte-exact, no path failed
# from the random loss alone beyond the black holes', both ends' memory flat, and the
# goodput of every phase at least 0.8 of what its healthy spines carried in the
# healthy phases.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

duration=${SOAK_SECONDS:-600}
phase=30
testbed_start netsoak --spines 4 --rate 1000 --mtu 4200
h1=$(tb addr h1)
paths=(--paths 16 --src-ports 16 --src-port-base 41000)
tb impair --all --loss 2

rss_kb() { # COMMAND: resident set of the process whose command line starts so
  local pid
  pid=$(pgrep -f -- "^$1" | head -1)
  [[ -n $pid ]] && awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0
}

# shellcheck disable=SC2119 # no options for this server
server_start
# The last 15 s are healthy, so that the side channel (TCP over the same fabric) reports.
timeout $((duration + 300)) "$TESTBED" --name "$TB" exec h1 -- "$PERF" client "$(tb addr h2)" \
  --json "$WORK/soak.json" --addr "$h1" "${paths[@]}" -D $((duration + 15)) --interval 1 \
  --check >"$WORK/soak.log" 2>&1 &
client_pid=$!
: >"$WORK/memory"
for ((k = 0; k * phase < duration; k++)); do
  spine=$(((k / 2) % 4 + 1))
  if ((k % 2 == 1)); then tb fail spine "$spine"; fi
  sleep "$phase"
  # `heal` returns the spine to the state `up` left, without its loss: put the loss back.
  if ((k % 2 == 1)); then tb heal spine "$spine" && tb impair --spine "$spine" --loss 2; fi
  echo "$(rss_kb "$PERF client") $(rss_kb "$PERF server")" >>"$WORK/memory"
done
wait "$client_pid" || fail "client failed: $(tail -5 "$WORK/soak.log"); server: $(tail -3 "$WORK/server.log")"
server_wait
tb heal all
# SOAK_KEEP=DIR keeps the client's JSON (the per-second series) and the memory samples.
if [[ -n ${SOAK_KEEP:-} ]]; then cp "$WORK/soak.json" "$WORK/memory" "$SOAK_KEEP/"; fi

[[ $(json "$WORK/soak.json" 'd["check_passed"]') == True ]] || fail "soak: bytes differ"
verdict=$(python3 - "$WORK/soak.json" "$WORK/memory" "$phase" <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1])); phase = int(sys.argv[3])
series = d["results"][0]["series"]
mem = [tuple(int(x) for x in line.split()) for line in open(sys.argv[2]) if line.strip()]
phases = len(mem)
def mean(k):  # goodput of phase k, leaving out its first 3 s (transition, clock offset)
    g = [g for t, g in series if phase * k + 3 <= t < phase * (k + 1)]
    return sum(g) / len(g) if g else 0
healthy = statistics.median(mean(k) for k in range(0, phases, 2))
def share(k): return mean(k) / (healthy * (3 if k % 2 else 4) / 4)
worst = min(range(phases), key=share)
ratio = share(worst)
half = max(len(mem) // 2, 1)
flat = all(max(m[i] for m in mem[half:]) <= 1.1 * max(m[i] for m in mem[:half]) + 4096
           for i in (0, 1))
conn = d["client"]["connections"][0]
ok = ratio >= 0.8 and flat
print(f"{'ok' if ok else 'bad'} healthy phases {healthy:.2f} Gb/s, worst phase {worst} "
      f"at {ratio:.2f} of its spines' share; memory (KB, client server) first {mem[0]} "
      f"last {mem[-1]}; {conn['path_failures']} path failures, {conn['reentropies']} re-entropies; "
      f"share per phase {' '.join(f'{share(k):.2f}' for k in range(phases))}")
PY
)
[[ $verdict == ok* ]] || fail "soak: $verdict"
ok "soak ${duration}s at 2% loss, a spine failed and healed every ${phase}s: byte-exact, ${verdict#ok }"
