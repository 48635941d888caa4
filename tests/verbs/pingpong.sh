#!/usr/bin/env bash
# ibv_rc_pingpong, unmodified, between two processes on one address (loopback): without a
# GID (the all-zero GID falls back to this host), with GID index 0, with completion events
# (-e), and at several sizes (inline up to 4096 bytes, larger ones from registered memory).
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

PORT=${MROCE_PORT:?}
TCP=$((PORT + 10))
ITERS=200
run() { # LABEL SIZE [ibv_rc_pingpong options]
  local label=$1 size=$2
  shift 2
  pair "$label" - - 127.0.0.1 "$TCP" --planes 127.0.0.1 -- ibv_rc_pingpong -n "$ITERS" -s "$size" "$@"
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
