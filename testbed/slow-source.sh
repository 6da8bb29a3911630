#!/bin/bash
# slow-source.sh: a fetch from a full-speed seed alone, and with a second seed serving at
# 1/10 of the first's rate beside it (given with --peer), 5 times each, interleaved, on
# loopback. Prints the seconds, the median ratio and each fetch's per-peer blocks.
#
#   testbed/slow-source.sh [RECONCILE] [SIZE]      (defaults: reconcile on PATH, 64 MiB)
#
# The hostile-load issue's goal: the fetch with the slow source takes at most 1.1x its time
# alone. Needs python3.
set -euo pipefail
B=${1:-reconcile}
SIZE=${2:-64M}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
head -c "$SIZE" /dev/urandom > data.bin
"$B" seed data.bin --listen /ip4/127.0.0.1/tcp/0 --ticket-file fast.ticket > fast.log 2>&1 &
sleep 1.5
"$B" fetch --ticket-file fast.ticket --out out --json > alone0.json 2>/dev/null
rate=$(python3 -c "import json; d=json.load(open('alone0.json')); print(int(d['bytes']/d['seconds']/10))")
echo "fast seed alone: $((rate * 10 / 1048576)) MiB/s; the slow seed serves at $((rate / 1048576)) MiB/s"
"$B" seed data.bin --listen /ip4/127.0.0.1/tcp/0 --rate "$rate" --ticket-file slow.ticket > slow.log 2>&1 &
sleep 1.5
slow=$(grep -o '/ip4/127.0.0.1/tcp/[0-9]*/p2p/[A-Za-z0-9]*' slow.log | head -1)
for i in 1 2 3 4 5; do
	rm -rf out; "$B" fetch --ticket-file fast.ticket --out out --json > "a$i.json" 2>/dev/null
	rm -rf out; "$B" fetch --ticket-file fast.ticket --peer "$slow" --out out --json > "b$i.json" 2>/dev/null
done
python3 - <<'P'
import json, statistics
a = [json.load(open(f'a{i}.json'))['seconds'] for i in range(1, 6)]
b = [json.load(open(f'b{i}.json')) for i in range(1, 6)]
bs = [x['seconds'] for x in b]
print('alone     s', [round(x, 3) for x in a], 'median', round(statistics.median(a), 3))
print('with slow s', [round(x, 3) for x in bs], 'median', round(statistics.median(bs), 3),
      'ratio', round(statistics.median(bs) / statistics.median(a), 3))
for x in b:
    print('  blocks by peer:', [(p['peer'][-6:], p['blocks'], p.get('stalled', 0), p.get('dropped', '')) for p in x['peers']])
P
