#!/usr/bin/env bash
# ibv_rc_pingpong, unmodified, between two processes on one address (loopback): without a
# GID (the all-zero GID falls back to this host), with GID index 0, with completion events
# (-e), and at several sizes (inline up to 4096 bytes, larger ones from registered memory);
# with the ibv_wr_* send API (-N) and with completion timestamps from an extended CQ (-t,
# also with -e);
# then ibv_srq_pingpong (16 QPs on one shared receive queue).
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

PORT=${MROCE_PORT:?}
TCP=$((PORT + 10))
ITERS=200
run() { # LABEL SIZE [options]; PINGPONG names the program (ibv_rc_pingpong)
  local label=$1 size=$2
  shift 2
  pair "$label" - - 127.0.0.1 "$TCP" --planes 127.0.0.1 -- "${PINGPONG:-ibv_rc_pingpong}" \
    -n "$ITERS" -s "$size" "$@"
  local server client
  server=$(pingpong_check "$WORK/$label.server" "$size" "$ITERS")
  client=$(pingpong_check "$WORK/$label.client" "$size" "$ITERS")
  ok "$label: $ITERS x $size bytes, $server / $client Mbit/s"
  TCP=$((TCP + 1))
}

run plain 4096
run gid0 4096 -g 0
run events 4096 -g 0 -e
run small 64 -g 0
run large 65536 -g 0 -r 16
run events-large 1000000 -g 0 -e -r 8
run new-send-api 4096 -g 0 -N
run new-send-api-events 65536 -g 0 -N -e
run timestamps 4096 -g 0 -t
# With events too: one poll per event, which must find an entry.
run timestamps-events 4096 -g 0 -t -e
for label in timestamps timestamps-events; do
  for side in server client; do
    grep -Eq '^Average receive completion clock cycles = [0-9.]+$' "$WORK/$label.$side" ||
      fail "$label: no completion clock figures from the $side"
  done
done
PINGPONG=ibv_srq_pingpong run srq 4096 -g 0
PINGPONG=ibv_srq_pingpong run srq-events 65536 -g 0 -e
