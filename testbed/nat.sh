#!/usr/bin/env bash
# NAT testbed: Linux network namespaces on one machine, an "internet" segment
# (198.18.0.0/24) with a relay/DHT bootstrap node and a public seed, and homes
# (100.64.x.0/24) behind nftables NAT routers of three kinds (see home below):
# A and B map endpoint-independently and drop unsolicited packets, D and E map
# the same way but answer them (TCP RST, ICMP port-unreachable), C and F are
# symmetric. Nothing touches the host's own interfaces and no namespace has a
# route out of the testbed; everything is removed at the end, also when a step
# fails.
#
#   bash testbed/nat.sh           # the five scenarios, pass/fail (CI)
#   bash testbed/nat.sh bench     # also: 256 MiB hole-punched vs public-public fetch
#   bash testbed/nat.sh answer10  # only: seed behind answering NAT D, fetcher behind
#                                 # answering NAT E, relay with default limits, 10
#                                 # tries: N of 10 hole-punched (exit 0 if all)
#   bash testbed/nat.sh matrix    # only: every pair of NAT kinds, each transport, a
#                                 # relay with default limits: a table of the paths
#
# Needs root (ip netns). Installs nftables and iproute2 with apt-get if missing.
# Scenarios:
#   1 seed behind NAT A, fetcher behind NAT B, ticket with the relay: byte-identical,
#     blocks over a hole-punched (direct, not relayed) connection
#   2 seed behind the symmetric NAT: completes through the relay (limits raised by
#     its operator), the summary says "relayed"
#   3 a fetcher given the root id and the bootstrap address only finds a public and a
#     NATed seed in the DHT and downloads from both (prints the time to first block)
#   5 (runs before 4, which stops the relay) a seed behind NAT A given no relay, only the bootstrap address, finds the relay
#     through the DHT (AutoRelay's peer source), reserves a slot on it and announces
#     its relay address; a fetcher behind NAT B given the root id only fetches from it
#   4 two partial fetchers in one home (each resumes a download holding a different
#     half of the file) find each other by mDNS and exchange blocks both ways with no
#     seed, relay or DHT running: both end byte-identical, each got blocks from the other
#   6 seed behind answering NAT D, fetcher behind answering NAT E (RST and ICMP
#     port-unreachable for unsolicited packets), relay with default limits: 3 of 3
#     byte-identical over a hole-punched connection (answer10 tries ten times)
set -uo pipefail

MODE=${1:-test}
case $MODE in
test | bench | answer10 | matrix) ;;
*) echo "usage: bash testbed/nat.sh [bench|answer10|matrix]" >&2; exit 2 ;;
esac
ROOT_DIR=$(cd "$(dirname "$0")/.." && pwd)
P=rcn$$                       # prefix of our namespaces and interfaces
WORK=$(mktemp -d /tmp/nattestbed.XXXXXX)
PIDS=()
FAILS=0
SIZE_MB=${NAT_TESTBED_MB:-16}
MATRIX_MB=${NAT_MATRIX_MB:-2}      # the matrix's file and time a try
MATRIX_SECS=${NAT_MATRIX_SECS:-20}
# NAT_MATRIX_ONLY=REGEX: only the matrix's tries whose SEEDKIND-FETCHKIND-TRANSPORT
# matches, e.g. answer-answer-both or -quic$
# NAT_TESTBED_DEBUG=1: the peers log at debug level, and so do go-libp2p's hole
# punching, observed addresses, identify, AutoRelay, relay and dialing (with
# KEEP_WORK=1 to read them; NAT_TESTBED_GOLOG replaces that GOLOG_LOG_LEVEL), and
# the answering routers' counters of answered packets are printed.
LOG_LEVEL=info
GOLOG=()
if [ -n "${NAT_TESTBED_DEBUG:-}" ]; then
	LOG_LEVEL=debug
	GOLOG=(env "GOLOG_LOG_LEVEL=${NAT_TESTBED_GOLOG:-error,p2p-holepunch=debug,observedaddrs=debug,net/identify=debug,autorelay=debug,swarm2=debug,basichost=debug,relay=debug}")
fi
START=$(date +%s)

say()  { printf '\n=== %s\n' "$*"; }
die()  { echo "nat.sh: FATAL: $*" >&2; exit 2; }

cleanup() {
	local rc=$?
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	sleep 0.3
	for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$P" || true); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	if [ -n "${KEEP_WORK:-}" ]; then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
	exit $rc
}
trap cleanup EXIT INT TERM

# --- prerequisites -------------------------------------------------------
# Without namespaces the testbed cannot run: loud, and a failure in CI.
notrun() {
	echo "##################################################################" >&2
	echo "nat.sh: NAT TESTBED NOT RUN: $*" >&2
	echo "##################################################################" >&2
	if [ "${CI:-}" = true ]; then exit 1; fi
	exit 0
}
if [ "$(id -u)" != 0 ]; then notrun "needs root to create network namespaces"; fi
need=()
command -v ip >/dev/null || need+=(iproute2)
command -v nft >/dev/null || need+=(nftables)
if [ ${#need[@]} -gt 0 ]; then
	echo "installing ${need[*]}"
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null || notrun "cannot install ${need[*]}"
fi
ip netns add "${P}probe" 2>/dev/null || notrun "cannot create network namespaces (ip netns add failed)"
ip netns del "${P}probe"

BIN=$WORK/reconcile
(cd "$ROOT_DIR" && if [ -f cmd/go.mod ]; then cd cmd && go build -o "$BIN" ./reconcile; else go build -o "$BIN" ./cmd/reconcile; fi) || die "build failed"

# --- topology ------------------------------------------------------------
nsx() { local ns=$1; shift; ip netns exec "$P$ns" "$@"; }

ip netns add "${P}sw"          # the internet's switch (a bridge)
nsx sw ip link add br0 type bridge
nsx sw ip link set br0 up
nsx sw ip link set lo up

# Interface names are at most 15 characters: veth pairs are vNNNNNaK / vNNNNNbK.
IF=0
V=v$(($$ % 100000))
# pubhost NAME ADDR: a namespace on the internet segment
pubhost() {
	local n=$1 addr=$2
	IF=$((IF + 1))
	ip netns add "$P$n"
	ip link add "${V}a$IF" type veth peer name "${V}b$IF"
	ip link set "${V}a$IF" netns "$P$n"
	ip link set "${V}b$IF" netns "${P}sw"
	nsx sw ip link set "${V}b$IF" master br0 up
	nsx "$n" ip link set lo up
	nsx "$n" ip link set "${V}a$IF" name eth0
	nsx "$n" ip addr add "$addr/24" dev eth0
	nsx "$n" ip link set eth0 up
}
# home NAME ROUTERADDR HOMENET(x) KIND: router namespace rtNAME on the
# internet, home namespace hNAME on 100.64.x.0/24 behind it. KIND is the
# router's NAT:
#   drop       endpoint-independent mapping (masquerade, ports kept); unsolicited
#              packets from the internet are dropped
#   answer     the same mapping, but unsolicited packets are answered, as many home
#              routers and carrier NATs do: TCP with a RST, UDP with ICMP
#              port-unreachable
#   symmetric  masquerade fully-random: a new external port for every destination;
#              unsolicited packets dropped
home() {
	local n=$1 pub=$2 x=$3 kind=$4
	pubhost "rt$n" "$pub"
	ip netns add "${P}h$n"
	IF=$((IF + 1))
	ip link add "${V}a$IF" type veth peer name "${V}b$IF"
	ip link set "${V}a$IF" netns "${P}h$n"
	ip link set "${V}b$IF" netns "${P}rt$n"
	nsx "h$n" ip link set lo up
	nsx "h$n" ip link set "${V}a$IF" name eth0
	nsx "h$n" ip addr add "100.64.$x.2/24" dev eth0
	nsx "h$n" ip link set eth0 up
	nsx "h$n" ip route add default via "100.64.$x.1"
	nsx "rt$n" ip link set "${V}b$IF" name lan0
	nsx "rt$n" ip addr add "100.64.$x.1/24" dev lan0
	nsx "rt$n" ip link set lan0 up
	nsx "rt$n" sysctl -qw net.ipv4.ip_forward=1
	local masq="masquerade" unsolicited='iifname "eth0" drop'
	case $kind in
	drop) ;;
	answer) unsolicited='iifname "eth0" meta l4proto tcp counter reject with tcp reset
		iifname "eth0" meta l4proto udp counter reject with icmp type port-unreachable
		iifname "eth0" drop' ;;
	symmetric) masq="masquerade random,fully-random" ;;
	*) die "home $n: unknown NAT kind $kind" ;;
	esac
	nsx "rt$n" nft -f - <<EOF
table ip nat {
	chain post { type nat hook postrouting priority 100; oifname "eth0" $masq; }
}
table ip filter {
	chain forward_chain { type filter hook forward priority 0; policy drop;
		ct state established,related accept
		iifname "lan0" oifname "eth0" accept
		$unsolicited
	}
	chain input_chain { type filter hook input priority 0; policy accept;
		iifname "eth0" ct state established,related accept
		$unsolicited
	}
}
EOF
}

pubhost relay 198.18.0.1
pubhost pubseed 198.18.0.5
pubhost pubfetch 198.18.0.6
home a 198.18.0.2 1 drop
home b 198.18.0.3 2 drop
home c 198.18.0.4 3 symmetric
home d 198.18.0.7 4 answer
home e 198.18.0.8 5 answer
home f 198.18.0.9 6 symmetric

# --- helpers -------------------------------------------------------------
# The testbed's internet is 198.18.0.0/24, a benchmark range go-libp2p takes for
# unroutable: --treat-as-public makes it take it for the internet (testbeds only).
# NATed peers keep libp2p's default of 4 observers before advertising an external
# address, so they do not advertise one here: peers meet through the relay and
# hole-punch (DCUtR uses addresses seen by one observer).
TB=(--treat-as-public 198.18.0.0/15 --no-portmap --log-level "$LOG_LEVEL")
NATED=("${TB[@]}" --reachability ${NAT_REACHABILITY:-auto})  # the CLI default
PUBLIC=("${TB[@]}" --reachability public --no-relay)

bg() { # bg NAME NS CMD...: run in the background, output in $WORK/NAME.{out,err}
	local name=$1 ns=$2; shift 2
	ip netns exec "$P$ns" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
	PIDS+=($!)
	eval "PID_$name=$!"
}
wait_for() { # wait_for FILE PATTERN SECONDS
	local i
	for ((i = 0; i < $3 * 10; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
field() { sed -n "s/.*\"$2\": *\"\([^\"]*\)\".*/\1/p" "$1" | head -1; }
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
show() { echo "--- $1"; sed -n '1,60p' "$WORK/$1.out"; grep -v '^$' "$WORK/$1.err" | tail -15; }

head -c $((SIZE_MB << 20)) /dev/urandom >"$WORK/file.bin"
head -c $((4 << 20)) /dev/urandom >"$WORK/file5.bin"

# --- answering NATs: answer10 and matrix ----------------------------------
# Relays with libp2p's default limits (128 KiB each way per relayed
# connection): enough to meet and punch a hole, not to carry a file. relayd
# listens on TCP and QUIC as a relay on the internet does; the matrix's
# single-transport columns use relayt (TCP only) and relayq (QUIC only).
# default_relay NAME PORT LISTEN...: starts it, sets RELAY_<NAME>_TCP and _QUIC
default_relay() {
	local name=$1 port=$2; shift 2
	bg "$name" relay "${GOLOG[@]}" "$BIN" relay "$@" --json --treat-as-public 198.18.0.0/15 --log-level "$LOG_LEVEL"
	wait_for "$WORK/$name.out" '"addrs"' 10 || { show "$name"; die "relay $name with default limits did not start"; }
	eval "RELAY_${name}_TCP=\$(grep -o '/ip4/198.18.0.1/tcp/$port/p2p/[A-Za-z0-9]*' \"\$WORK/$name.out\" | head -1)"
	eval "RELAY_${name}_QUIC=\$(grep -o '/ip4/198.18.0.1/udp/$port/quic-v1/p2p/[A-Za-z0-9]*' \"\$WORK/$name.out\" | head -1)"
}

# answered HOME: the unsolicited packets an answering router has answered so
# far, "TCP/UDP" (its nft counters)
answered() {
	nsx "rt$1" nft list chain ip filter input_chain 2>/dev/null |
		awk '/counter/ { for (i = 1; i < NF; i++) if ($i == "packets") c[$0 ~ /tcp/ ? "t" : "u"] += $(i + 1) }
			END { printf "%d/%d", c["t"], c["u"] }'
}

# home_of KIND seed|fetch: the home a seed or a fetcher of a NAT kind runs in
# (two homes of each kind, so that a pair of one kind crosses two NATs)
home_of() {
	case $1-$2 in
	drop-seed) echo a ;; drop-fetch) echo b ;;
	answer-seed) echo d ;; answer-fetch) echo e ;;
	symmetric-seed) echo c ;; symmetric-fetch) echo f ;;
	esac
}
declare -A NET=([a]=1 [b]=2 [c]=3 [d]=4 [e]=5 [f]=6)

# try_fetch NAME FILE SEEDHOME FETCHHOME TRANSPORT PORT SECONDS: a seed in
# SEEDHOME with a slot on a relay with default limits, a fetcher in FETCHHOME
# given its ticket, no DHT, no mDNS. TRANSPORT:
#   both       seed and fetcher listen on TCP and QUIC, relay relayd (as a user runs it)
#   tcp        they listen on TCP only, relay relayt (TCP only)
#   quic       they listen on QUIC only, relay relayq (QUIC only)
#   quicpeers  they listen on QUIC only, relay relayd (the seed is given its QUIC address)
# Sets TRY_RESULT: hole-punched, relayed, direct (the paths of the fetch
# summary) or failed, and TRY_NOTE (why it failed); returns 0 if the copy is
# byte-identical.
try_fetch() {
	local name=$1 file=$2 tr=$5 port=$6 secs=$7 rc relay
	local sx=${NET[$3]} fx=${NET[$4]} sl fl
	local tcp="tcp/$port" quic="udp/$port/quic-v1"
	case $tr in
	both) sl=(--listen /ip4/100.64.$sx.2/$tcp --listen /ip4/100.64.$sx.2/$quic)
		fl=(--listen /ip4/100.64.$fx.2/$tcp --listen /ip4/100.64.$fx.2/$quic); relay=$RELAY_relayd_TCP ;;
	tcp) sl=(--listen /ip4/100.64.$sx.2/$tcp); fl=(--listen /ip4/100.64.$fx.2/$tcp); relay=$RELAY_relayt_TCP ;;
	quic) sl=(--listen /ip4/100.64.$sx.2/$quic); fl=(--listen /ip4/100.64.$fx.2/$quic); relay=$RELAY_relayq_QUIC ;;
	quicpeers) sl=(--listen /ip4/100.64.$sx.2/$quic); fl=(--listen /ip4/100.64.$fx.2/$quic); relay=$RELAY_relayd_QUIC ;;
	esac
	TRY_RESULT=failed TRY_NOTE=
	bg "${name}seed" "h$3" "${GOLOG[@]}" "$BIN" seed "$file" "${sl[@]}" --relay "$relay" --json --no-dht --no-mdns "${NATED[@]}"
	if ! wait_for "$WORK/${name}seed.out" '"ticket"' 20; then
		TRY_NOTE="the seed did not start"
		eval "kill \$PID_${name}seed" 2>/dev/null
		return 1
	fi
	ip netns exec "${P}h$4" "${GOLOG[@]}" timeout "$secs" "$BIN" fetch "$(field "$WORK/${name}seed.out" ticket)" \
		--out "$WORK/${name}copy" --json --no-dht --no-mdns "${fl[@]}" "${NATED[@]}" \
		>"$WORK/${name}fetch.out" 2>"$WORK/${name}fetch.err"
	rc=$?
	eval "kill \$PID_${name}seed" 2>/dev/null
	if [ -n "${NAT_TESTBED_DEBUG:-}" ]; then
		echo "  unsolicited packets answered so far (TCP/UDP): router d $(answered d), router e $(answered e)"
	fi
	if [ $rc = 0 ] && cmp -s "$file" "$WORK/${name}copy"; then
		TRY_RESULT=$(sed -n 's/.*"path": "\([^"]*\)".*/\1/p' "$WORK/${name}fetch.out" | sort -u | paste -sd+ -)
	elif [ $rc = 0 ]; then
		TRY_NOTE="the copy differs"
	elif [ $rc = 124 ]; then
		TRY_NOTE="timed out after $secs s"
	else
		TRY_NOTE=$(grep -E '^(error: |reconcile [a-z]+: )' "$WORK/${name}fetch.err" | tail -1 | cut -c1-150)
		[ -n "$TRY_NOTE" ] || TRY_NOTE="exit $rc"
	fi
	rm -rf "$WORK/${name}copy" "$WORK/${name}copy.reconcile"
	[ $rc = 0 ] && [ "$TRY_RESULT" != failed ]
}

# answer_try N: the answering-NAT scenario once: a seed behind answering NAT D,
# a fetcher behind answering NAT E, a ticket with the relay, the relay with
# default limits; pass = byte-identical over a hole-punched connection.
answer_try() {
	try_fetch "ans$1_" "$WORK/file.bin" d e both $((4100 + $1)) 40
	[ "$TRY_RESULT" = hole-punched ]
}

# elapsed T0: seconds since T0 (date +%s.%N), one decimal
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

if [ "$MODE" = answer10 ]; then
	default_relay relayd 4002 --listen /ip4/198.18.0.1/tcp/4002 --listen /ip4/198.18.0.1/udp/4002/quic-v1
	tries=${NAT_ANSWER_TRIES:-10}
	say "answer10: seed behind answering NAT D, fetcher behind answering NAT E, relay with default limits, $tries tries"
	ok=0
	for i in $(seq 1 "$tries"); do
		t0=$(date +%s.%N)
		if answer_try "$i"; then ok=$((ok + 1)); fi
		printf 'try %2d: %-13s %5s s  %s\n' "$i" "$TRY_RESULT" "$(elapsed "$t0")" "$TRY_NOTE"
	done
	say "answer10: $ok of $tries byte-identical over a hole-punched connection; done in $(($(date +%s) - START)) s"
	[ "$ok" = "$tries" ]
	exit
fi

if [ "$MODE" = matrix ]; then
	default_relay relayd 4002 --listen /ip4/198.18.0.1/tcp/4002 --listen /ip4/198.18.0.1/udp/4002/quic-v1
	default_relay relayt 4003 --listen /ip4/198.18.0.1/tcp/4003
	default_relay relayq 4004 --listen /ip4/198.18.0.1/udp/4004/quic-v1
	say "matrix: every pair of NAT kinds, each transport, relays with default limits, ${MATRIX_MB} MiB, ${MATRIX_SECS} s a try"
	head -c $((MATRIX_MB << 20)) /dev/urandom >"$WORK/small.bin"
	declare -A CELL
	n=0
	for sk in drop answer symmetric; do
		for fk in drop answer symmetric; do
			for tr in tcp quic quicpeers both; do
				n=$((n + 1))
				CELL[$sk-$fk-$tr]=-
				[[ $sk-$fk-$tr =~ ${NAT_MATRIX_ONLY:-.} ]] || continue
				t0=$(date +%s.%N)
				try_fetch "m${n}_" "$WORK/small.bin" "$(home_of $sk seed)" "$(home_of $fk fetch)" $tr $((4200 + n)) "$MATRIX_SECS"
				CELL[$sk-$fk-$tr]=$TRY_RESULT
				printf '%-9s -> %-9s %-9s %-13s %5s s  %s\n' $sk $fk $tr "$TRY_RESULT" "$(elapsed "$t0")" "$TRY_NOTE"
			done
		done
	done
	say "matrix: the path of the blocks, seed's NAT -> fetcher's NAT (${MATRIX_MB} MiB, relays with default limits)"
	row() { printf '| %-22s | %-12s | %-12s | %-22s | %-12s |\n' "$@"; }
	row "seed NAT -> fetch NAT" "TCP only" "QUIC only" "QUIC peers, relay both" "TCP and QUIC"
	row ---------------------- ------------ ------------ ---------------------- ------------ | tr ' ' -
	for sk in drop answer symmetric; do
		for fk in drop answer symmetric; do
			row "$sk -> $fk" "${CELL[$sk-$fk-tcp]}" "${CELL[$sk-$fk-quic]}" "${CELL[$sk-$fk-quicpeers]}" "${CELL[$sk-$fk-both]}"
		done
	done
	say "done in $(($(date +%s) - START)) s"
	exit 0
fi

say "relay and DHT bootstrap node on the internet (198.18.0.1)"
bg relay relay "$BIN" relay --listen /ip4/198.18.0.1/tcp/4001 --listen /ip4/198.18.0.1/udp/4001/quic-v1 \
	--data-limit 64MiB --duration-limit 2m --json --treat-as-public 198.18.0.0/15 --log-level info
wait_for "$WORK/relay.out" '"addrs"' 10 || { show relay; die "relay did not start"; }
sleep 0.3
RELAY=$(grep -o '/ip4/198.18.0.1/tcp/4001/p2p/[A-Za-z0-9]*' "$WORK/relay.out" | head -1)
echo "relay: $RELAY"

# Scenario 5's seed starts now: with --reachability auto (the default) AutoNAT takes
# some 30 s to find it unreachable before AutoRelay looks for a relay.
T_5=$(date +%s)
bg seed5 ha "$BIN" seed "$WORK/file5.bin" --listen /ip4/100.64.1.2/tcp/4005 --listen /ip4/100.64.1.2/udp/4005/quic-v1 \
	--bootstrap "$RELAY" --json "${NATED[@]}"
( wait_for "$WORK/seed5.err" 'relay addresses.*p2p-circuit' 90 && echo $(($(date +%s) - T_5)) >"$WORK/seed5.slot" ) &
PIDS+=($!)

# --- scenario 1 ----------------------------------------------------------
say "1: seed behind NAT A, fetcher behind NAT B, hole punching"
bg seedA ha "$BIN" seed "$WORK/file.bin" --listen /ip4/100.64.1.2/tcp/4001 --listen /ip4/100.64.1.2/udp/4001/quic-v1 \
	--relay "$RELAY" --json "${NATED[@]}"
wait_for "$WORK/seedA.out" '"ticket"' 20 || { show seedA; die "seed A did not start"; }
TICKET_A=$(field "$WORK/seedA.out" ticket)
ROOT=$(field "$WORK/seedA.out" root)
grep -q p2p-circuit "$WORK/seedA.out" && echo "seed A's ticket carries its relay address" || echo "note: seed A's ticket has no relay address yet"
t0=$(date +%s.%N)
ip netns exec "${P}hb" timeout 90 "$BIN" fetch "$TICKET_A" --out "$WORK/out1" --json --no-mdns \
	--listen /ip4/100.64.2.2/tcp/4001 --listen /ip4/100.64.2.2/udp/4001/quic-v1 "${NATED[@]}" \
	>"$WORK/fetch1.out" 2>"$WORK/fetch1.err"
rc=$?
echo "fetch took $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s"
if [ $rc = 0 ] && cmp -s "$WORK/file.bin" "$WORK/out1"; then
	if grep -q '"path": "hole-punched"' "$WORK/fetch1.out" && ! grep -q '"path": "relayed"' "$WORK/fetch1.out"; then
		pass "1: byte-identical, blocks over a hole-punched direct connection"
	else
		fail "1: byte-identical but not over a hole-punched connection"; show fetch1
	fi
else
	fail "1: fetch failed (exit $rc) or output differs"; show fetch1; show seedA
fi

# --- scenario 2 ----------------------------------------------------------
say "2: seed behind the symmetric NAT C: through the relay"
bg seedC hc "$BIN" seed "$WORK/file.bin" --listen /ip4/100.64.3.2/tcp/4001 --listen /ip4/100.64.3.2/udp/4001/quic-v1 \
	--relay "$RELAY" --json "${NATED[@]}"
wait_for "$WORK/seedC.out" '"ticket"' 20 || { show seedC; die "seed C did not start"; }
TICKET_C=$(field "$WORK/seedC.out" ticket)
ip netns exec "${P}hb" timeout 90 "$BIN" fetch "$TICKET_C" --out "$WORK/out2" --json --no-mdns --no-dht \
	--listen /ip4/100.64.2.2/tcp/4002 --listen /ip4/100.64.2.2/udp/4002/quic-v1 "${NATED[@]}" \
	>"$WORK/fetch2.out" 2>"$WORK/fetch2.err"
rc=$?
if [ $rc = 0 ] && cmp -s "$WORK/file.bin" "$WORK/out2" && grep -q '"path": "relayed"' "$WORK/fetch2.out"; then
	pass "2: byte-identical through the relay (summary: relayed), $SIZE_MB MiB within its 64 MiB limit"
else
	fail "2: exit $rc, or output differs, or not relayed"; show fetch2
fi
kill "$PID_seedC" 2>/dev/null

# --- scenario 3 ----------------------------------------------------------
say "3: root id and bootstrap address only: two seeds (public, NAT A) found in the DHT"
bg seedP pubseed "$BIN" seed "$WORK/file.bin" --listen /ip4/198.18.0.5/tcp/4001 --listen /ip4/198.18.0.5/udp/4001/quic-v1 \
	--bootstrap "$RELAY" --json "${PUBLIC[@]}"
wait_for "$WORK/seedP.out" '"ticket"' 20 || { show seedP; die "public seed did not start"; }
wait_for "$WORK/seedP.err" 'announced root' 20 || echo "note: public seed has not announced yet"
wait_for "$WORK/seedA.err" 'announced root' 20 || echo "note: seed A has not announced yet"
bg fetch3 hb "$BIN" fetch "$ROOT" --bootstrap "$RELAY" --out "$WORK/out3" --json --seed-after \
	--listen /ip4/100.64.2.2/tcp/4003 --listen /ip4/100.64.2.2/udp/4003/quic-v1 "${NATED[@]}"
wait_for "$WORK/fetch3.out" '"peers"' 90
sleep 0.5
TTFB=$(sed -n 's/.*"first_block_seconds": *\([0-9.e+-]*\).*/\1/p' "$WORK/fetch3.out" | head -1)
npeers=$(grep -c '^      "blocks": [1-9]' "$WORK/fetch3.out")
if cmp -s "$WORK/file.bin" "$WORK/out3" && [ "$npeers" -ge 2 ]; then
	pass "3: found both seeds in the DHT and downloaded from $npeers peers; time to first block ${TTFB:-?} s (goal < 5 s)"
else
	fail "3: output differs or fewer than 2 peers sent blocks ($npeers)"; show fetch3
fi

# --- scenario 5 ----------------------------------------------------------
say "5: seed behind NAT A with no --relay finds the relay through the DHT; fetcher behind NAT B"
wait_for "$WORK/seed5.out" '"ticket"' 20 || { show seed5; die "seed 5 did not start"; }
ROOT5=$(field "$WORK/seed5.out" root)
wait_for "$WORK/seed5.slot" . 60 && echo "seed 5 held a slot on a relay found through the DHT $(cat "$WORK/seed5.slot") s after it started (AutoNAT, then AutoRelay)" \
	|| echo "note: seed 5 has no relay address yet"
ip netns exec "${P}hb" timeout 90 "$BIN" fetch "$ROOT5" --bootstrap "$RELAY" --out "$WORK/out5" --json --no-mdns \
	--listen /ip4/100.64.2.2/tcp/4005 --listen /ip4/100.64.2.2/udp/4005/quic-v1 "${NATED[@]}" \
	>"$WORK/fetch5.out" 2>"$WORK/fetch5.err"
rc=$?
P5=$(sed -n 's/.*"path": "\([^"]*\)".*/\1/p' "$WORK/fetch5.out" | sort -u | paste -sd, -)
if [ $rc = 0 ] && cmp -s "$WORK/file5.bin" "$WORK/out5" \
	&& grep -q 'relay candidate found through the DHT' "$WORK/seed5.err" \
	&& grep -Eq '"path": "(hole-punched|relayed)"' "$WORK/fetch5.out"; then
	pass "5: byte-identical from a NATed seed whose relay came from the DHT (path: $P5)"
else
	fail "5: exit $rc, output differs, no relay from the DHT, or not through a relay (path: $P5)"; show fetch5; show seed5
fi

# --- scenario 4 ----------------------------------------------------------
say "4: LAN: two partial fetchers in home B exchange blocks both ways via mDNS, no seed, relay or DHT"
for n in seedA seedP seed5 relay fetch3; do eval "kill \$PID_$n" 2>/dev/null; done
# Two interrupted downloads: each output holds one half of the file (the rest
# zeros) beside the state a fetch keeps (OUT.reconcile/: the manifest); a
# resumed fetch re-hashes the output and keeps the blocks that match. The
# manifest is reconcile chunk's, of fixed-size blocks (--block-size, so each
# half is whole blocks): its root is not the seeds' (content-defined
# blocks), and the fetchers resume its content.
"$BIN" chunk "$WORK/file.bin" --block-size 256KiB --manifest "$WORK/file.man" --json >"$WORK/chunk4.json" || die "chunk failed"
ROOT4=$(field "$WORK/chunk4.json" id)
HALF=$((SIZE_MB << 19))
for x in X Y; do mkdir -p "$WORK/out4$x.reconcile"; cp "$WORK/file.man" "$WORK/out4$x.reconcile/manifest"; done
{ head -c $HALF "$WORK/file.bin"; head -c $HALF /dev/zero; } >"$WORK/out4X"
{ head -c $HALF /dev/zero; tail -c +$((HALF + 1)) "$WORK/file.bin"; } >"$WORK/out4Y"
sleep 0.5
for x in X Y; do
	port=4006; [ $x = Y ] && port=4007
	bg "fetch4$x" hb timeout 60 "$BIN" fetch "$ROOT4" --out "$WORK/out4$x" --json --no-dht --no-relay --seed-after \
		--listen /ip4/100.64.2.2/tcp/$port "${TB[@]}"
done
wait_for "$WORK/fetch4X.out" '"peers"' 60; wait_for "$WORK/fetch4Y.out" '"peers"' 60
sleep 0.5
# from FILE: the peers that sent blocks, as "ID:BLOCKS" words
from() { awk '/"peer":/ { gsub(/[",]/, "", $2); p = $2 } /^      "blocks":/ { gsub(/,/, "", $2); if (p != "" && $2 > 0) printf "%s:%s ", p, $2; p = "" }' "$1"; }
FX=$(from "$WORK/fetch4X.out"); FY=$(from "$WORK/fetch4Y.out")
RX=$(sed -n 's/.*"resumed_blocks": *\([0-9]*\).*/\1/p' "$WORK/fetch4X.out"); RY=$(sed -n 's/.*"resumed_blocks": *\([0-9]*\).*/\1/p' "$WORK/fetch4Y.out")
echo "X resumed ${RX:-?} blocks, got from: ${FX:-nobody}; Y resumed ${RY:-?} blocks, got from: ${FY:-nobody}"
nx=$(echo $FX | wc -w); ny=$(echo $FY | wc -w)
if cmp -s "$WORK/file.bin" "$WORK/out4X" && cmp -s "$WORK/file.bin" "$WORK/out4Y" \
	&& [ "$nx" = 1 ] && [ "$ny" = 1 ] && [ "${FX%%:*}" != "${FY%%:*}" ]; then
	pass "4: both byte-identical; each got its missing half from the other, found on the LAN"
else
	fail "4: outputs differ or blocks did not flow both ways"; show fetch4X; show fetch4Y
fi
kill "$PID_fetch4X" "$PID_fetch4Y" 2>/dev/null

say "6: seed behind answering NAT D, fetcher behind answering NAT E (they answer unsolicited packets with RST / ICMP), relay with default limits, 3 tries"
default_relay relayd 4002 --listen /ip4/198.18.0.1/tcp/4002 --listen /ip4/198.18.0.1/udp/4002/quic-v1
ok6=0
for i in 1 2 3; do
	t0=$(date +%s.%N)
	if answer_try "$i"; then ok6=$((ok6 + 1)); fi
	tr6=$(sed -n 's/.*"transport": "\([^"]*\)".*/\1/p' "$WORK/ans${i}_fetch.out" | sort -u | paste -sd+ -)
	printf 'try %d: %-13s over %-5s %5s s  %s\n' "$i" "$TRY_RESULT" "${tr6:-?}" "$(elapsed "$t0")" "$TRY_NOTE"
done
if [ "$ok6" = 3 ]; then
	pass "6: 3 of 3 byte-identical over a hole-punched connection across answering NATs"
else
	fail "6: $ok6 of 3 hole-punched across answering NATs (bash testbed/nat.sh answer10 tries ten times; NAT_TESTBED_DEBUG=1 logs the punch)"
fi

# --- benchmark -----------------------------------------------------------
if [ "$MODE" = bench ]; then
	say "bench: 256 MiB, hole-punched (NAT A -> NAT B) vs public (198.18.0.5 -> 198.18.0.6)"
	head -c $((256 << 20)) /dev/urandom >"$WORK/big.bin"
	bg relayb relay "$BIN" relay --listen /ip4/198.18.0.1/tcp/4011 --listen /ip4/198.18.0.1/udp/4011/quic-v1 --json --treat-as-public 198.18.0.0/15
	wait_for "$WORK/relayb.out" '"addrs"' 10
	RB=$(grep -o '/ip4/198.18.0.1/tcp/4011/p2p/[A-Za-z0-9]*' "$WORK/relayb.out" | head -1)
	bg bseedA ha "$BIN" seed "$WORK/big.bin" --listen /ip4/100.64.1.2/tcp/4011 --listen /ip4/100.64.1.2/udp/4011/quic-v1 --relay "$RB" --json --no-dht --no-mdns "${NATED[@]}"
	bg bseedP pubseed "$BIN" seed "$WORK/big.bin" --listen /ip4/198.18.0.5/tcp/4011 --listen /ip4/198.18.0.5/udp/4011/quic-v1 --json --no-dht --no-mdns "${PUBLIC[@]}"
	wait_for "$WORK/bseedA.out" '"ticket"' 60; wait_for "$WORK/bseedP.out" '"ticket"' 60
	# Two rounds, alternating, each fetch into a fresh folder; the best of each kind counts.
	for r in 1 2; do
		rm -rf "$WORK/bout1" "$WORK/bout2" "$WORK/bout1.reconcile" "$WORK/bout2.reconcile"
		ip netns exec "${P}hb" "$BIN" fetch "$(field "$WORK/bseedA.out" ticket)" --out "$WORK/bout1" --json --no-dht --no-mdns \
			--listen /ip4/100.64.2.2/tcp/402$r --listen /ip4/100.64.2.2/udp/402$r/quic-v1 "${NATED[@]}" >"$WORK/bfetch1.$r.out" 2>"$WORK/bfetch1.$r.err"
		cmp -s "$WORK/big.bin" "$WORK/bout1" || echo "bench: hole-punched output differs"
		rm -rf "$WORK/bout2" "$WORK/bout2.reconcile"
		ip netns exec "${P}pubfetch" "$BIN" fetch "$(field "$WORK/bseedP.out" ticket)" --out "$WORK/bout2" --json --no-dht --no-mdns \
			--listen /ip4/198.18.0.6/tcp/402$r --listen /ip4/198.18.0.6/udp/402$r/quic-v1 "${PUBLIC[@]}" >"$WORK/bfetch2.$r.out" 2>"$WORK/bfetch2.$r.err"
	done
	secs() { sed -n 's/.*"seconds": *\([0-9.e+-]*\).*/\1/p' "$@" | sort -g | head -1; }
	s1=$(secs "$WORK"/bfetch1.*.out)
	s2=$(secs "$WORK"/bfetch2.*.out)
	p1=$(cat "$WORK"/bfetch1.*.out | sed -n 's/.*"path": "\([^"]*\)".*/\1/p' | sort -u | paste -sd, -)
	awk -v a="$s1" -v b="$s2" -v p="$p1" 'BEGIN { if (a > 0 && b > 0) printf "bench: 256 MiB NAT A->B (%s) %.2f s (%.0f MiB/s), public->public %.2f s (%.0f MiB/s): ratio %.2f (goal >= 0.8)\n", p, a, 256/a, b, 256/b, b/a; else print "bench: a fetch failed" }'
	# The same after the first block (seconds minus the time to first block, which
	# for the NATed pair includes meeting through the relay and punching the hole).
	after() { local k r best=""; for r in 1 2; do
		k=$(awk -v s="$(secs "$WORK/bfetch$1.$r.out")" -v f="$(sed -n 's/.*"first_block_seconds": *\([0-9.e+-]*\).*/\1/p' "$WORK/bfetch$1.$r.out" | head -1)" \
			'BEGIN { if (s > 0 && f != "") printf "%.3f", s - f }')
		if [ -n "$k" ] && { [ -z "$best" ] || awk -v a="$k" -v b="$best" 'BEGIN { exit !(a < b) }'; }; then best=$k; fi
	done; echo "$best"; }
	a1=$(after 1); a2=$(after 2)
	awk -v a="$a1" -v b="$a2" 'BEGIN { if (a > 0 && b > 0) printf "bench: after the first block: NAT A->B %.2f s, public->public %.2f s: ratio %.2f (approx.; the rest is setup: relay, hole punch)\n", a, b, b/a }'
fi

say "done in $(($(date +%s) - START)) s: $FAILS failed"
[ $FAILS = 0 ]
