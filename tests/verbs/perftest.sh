#!/usr/bin/env bash
# perftest, unmodified, between two processes on one address (loopback): ib_write_bw (one
# and four QPs, which become streams of one connection), ib_send_bw, ib_read_bw and
# ib_write_lat at several sizes and over all sizes (-a), ib_send_bw on a shared receive
# queue (--use-srq, four QPs), then ib_read_lat, ib_send_lat,
# ib_atomic_bw and ib_atomic_lat. Each result row must show the requested size and
# iterations and a positive bandwidth or latency.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

PORT=${MROCE_PORT:?}
TCP=$((PORT + 10))
next_tcp() { TCP=$((TCP + 1)); }

bw() { # LABEL PROGRAM SIZE ITERS QPS [options]
  local label=$1 program=$2 size=$3 iters=$4 qps=$5
  shift 5
  pair "$label" - - 127.0.0.1 "$TCP" --planes 127.0.0.1 -- \
    "$program" -s "$size" -n "$iters" -q "$qps" "$@"
  # perftest counts the iterations of all queue pairs together.
  local server client
  server=$(bw_check "$WORK/$label.server" "$size" $((iters * qps)))
  client=$(bw_check "$WORK/$label.client" "$size" $((iters * qps)))
  ok "$label: $iters x $size bytes, $client MB/s (server reports $server)"
  next_tcp
}

lat() { # LABEL SIZE ITERS [PROGRAM]
  local label=$1 size=$2 iters=$3 program=${4:-ib_write_lat}
  pair "$label" - - 127.0.0.1 "$TCP" --planes 127.0.0.1 -- "$program" -s "$size" -n "$iters"
  ok "$label: $iters x $size bytes, typical $(lat_check "$WORK/$label.client" "$size" "$iters") usec"
  next_tcp
}

bw write_bw ib_write_bw 65536 2000 1
bw write_bw_4qp ib_write_bw 16384 1000 4
bw write_bw_small ib_write_bw 64 2000 1
bw send_bw ib_send_bw 65536 1000 1
bw send_bw_srq ib_send_bw 65536 1000 4 --use-srq
bw read_bw ib_read_bw 65536 1000 1
lat write_lat_8 8 1000
lat write_lat_4k 4096 500

# Every size from 2 bytes to 8 MB.
pair write_lat_all - - 127.0.0.1 "$TCP" --planes 127.0.0.1 -- ib_write_lat -a -n 5
for ((size = 2; size <= 8388608; size *= 2)); do
  lat_check "$WORK/write_lat_all.client" "$size" 5 >/dev/null
done
ok "write_lat_all: 23 sizes from 2 bytes to 8 MB"
next_tcp

lat read_lat 64 300 ib_read_lat
lat send_lat 64 300 ib_send_lat
lat atomic_lat 8 300 ib_atomic_lat
bw atomic_bw ib_atomic_bw 8 1000 1
