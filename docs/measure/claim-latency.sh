#!/bin/bash
set -e
# Cross-host claim latency: two hosts on one bare remote, both on
# mailfs sync --every $T (default 4s), the README's worker loop on the
# host that is not the queue's home; prints each claim's seconds.
# Usage: T=4s docs/measure/claim-latency.sh   (MAILFS=path to use another build)
m=${MAILFS:-mailfs}
W=$(mktemp -d); trap "rm -rf $W" EXIT; cd $W
git init -q --bare -b main remote.git
mkdir alpha beta
(cd alpha && $m init >/dev/null && $m host alpha && $m agent add mayor >/dev/null && $m home claim mayor >/dev/null 2>&1 && $m queue create work >/dev/null 2>&1 || true)
(cd alpha && for i in $(seq 1 12); do $m send --from mayor queue:work -s "job $i" -m x >/dev/null; done; $m sync --remote $W/remote.git >/dev/null 2>&1)
(cd beta && $m init >/dev/null && $m host beta && $m agent add nux >/dev/null && $m home claim nux >/dev/null 2>&1; $m sync --remote $W/remote.git >/dev/null 2>&1)
T=${T:-4s}
(cd alpha && exec $m sync --every $T >/dev/null 2>&1) & A=$!
(cd beta && exec $m sync --every $T >/dev/null 2>&1) & B=$!
sleep 2
cd beta
for i in $(seq 1 10); do
  s=$(date +%s.%N)
  id=$($m claim queue:work --as nux --id --timeout 2m 2>/dev/null) || echo "claim failed"
  e=$(date +%s.%N)
  awk "BEGIN { printf \"%.2f\\n\", $e - $s }"; $m mark-read nux "$id" >/dev/null
  sleep 0.$((RANDOM % 9))
done
kill $A $B; wait 2>/dev/null
