#!/usr/bin/env bash
# The demo shows the headline: MetaRoCE and the RoCEv2 baseline side by side on the same
# transfers, MetaRoCE byte-exact in every case and ahead of RoCEv2 at 10% loss and with a
# dead spine, where the baseline's one path cannot leave the spine.
set -euo pipefail
demo=$1
out=$("$demo" --messages 40)
echo "$out"

# The rows of the side-by-side table: case | MetaRoCE ... | RoCEv2 ... | ratio.
rows=$(grep -E '^(no loss|[0-9.]+% loss)' <<<"$out" | grep '|' || true)
[[ $(wc -l <<<"$rows") -eq 4 ]] || { echo "expected 4 cases side by side"; exit 1; }
field() { awk -F'|' -v row="$1" -v col="$2" -v n="$3" \
  'NR == row { split($col, f, " "); print f[n] }' <<<"$rows"; }

for row in 1 2 3 4; do
  [[ $(field "$row" 2 4) == yes ]] || { echo "row $row: MetaRoCE not byte-exact"; exit 1; }
done
# Kept share of lossless goodput (column 2 of each side, "NN%").
meta_kept() { field "$1" 2 2 | tr -d %; }
roce_kept() { field "$1" 3 2 | tr -d %; }
for row in 3 4; do
  ((10#$(meta_kept "$row") > 10#$(roce_kept "$row"))) ||
    { echo "row $row: MetaRoCE kept no more than RoCEv2"; exit 1; }
done
[[ $(field 4 3 4) == failed, ]] ||
  { echo "the baseline's queue pair should fail when its spine dies"; exit 1; }
echo "demo: side by side, MetaRoCE ahead at 10% loss and with a dead spine"
