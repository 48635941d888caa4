#!/bin/sh
# Starts one MPI rank over MetaRoCE: the device is RANK_ADDR, else the namespace's first
# IPv4 address that is not on lo (libfabric's verbs provider skips lo). MROCE_RUN names
# mroce-run; RANK_DEVICE_FILES=1 adds --device-files (UCX looks for them).
addr=${RANK_ADDR:-$(ip -4 -o addr show | awk '$2 != "lo" { sub("/.*", "", $4); print $4; exit }')}
if [ -z "$addr" ]; then
  echo "rank.sh: no IPv4 address outside lo in this namespace" >&2
  exit 1
fi
if [ "${RANK_DEVICE_FILES:-0}" = 1 ]; then
  exec "$MROCE_RUN" --planes "$addr" --device-files -- "$@"
fi
exec "$MROCE_RUN" --planes "$addr" -- "$@"
