#!/usr/bin/env bash
# Emulates NODES nodes x RPN ranks per node on this one machine and measures all-reduce algorithms:
# every rank in its own network namespace with its own rate-limited "NIC" (a veth into a bridge),
# shared memory between the ranks of a node (same PANAMAX_NODE), TCP through the veths between nodes.
#
#   sudo scripts/emulate-hierarchy.sh [options]       sweep the algorithms, print a table and ratios
#   sudo scripts/emulate-hierarchy.sh --single-stream one TCP stream through one limited veth
#   sudo scripts/emulate-hierarchy.sh --plumbing      allreduce over the emulated network (-t auto, -c 1),
#                                                     with the transports and the tc counters
#   sudo scripts/emulate-hierarchy.sh --cleanup       remove namespaces left by an earlier run
#
# Run with --help for the options. See docs/operations/emulation.md.
set -euo pipefail

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
ROOT="$(cd "$(dirname "$SELF")/.." && pwd)"
PREFIX=pmx
SUBNET=10.213.0

# Internal mode, used as PANAMAX_RANK_WRAPPER: puts child rank R in its namespace and node, then execs the rank.
if [ "${1:-}" = "--rank-exec" ]; then
  r=$2; shift 2
  [[ "$r" =~ ^[0-9]+$ ]] || { echo "emulate-hierarchy: bad rank '$r'" >&2; exit 2; }
  exec ip netns exec "$PREFIX-r$r" env PANAMAX_NODE="node$(( r / ${PMX_EMU_RPN:?} ))" "$@"
fi

usage() {
  cat <<EOF
usage: sudo $0 [options]
  --nodes N            emulated nodes (default 2)
  --ranks-per-node R   ranks per node (default 2)
  --rate RATE          tbf rate of every rank's NIC, each direction, in tc units: 400mbit, 1gbit, 50mbps (default 400mbit)
  --burst BYTES        tbf burst (default: rate/250 bytes, at least 64 KiB)
  --shm-bw BW          intra-node bandwidth given to --topology (default 5G)
  --alpha A,B          per-message latencies given to --topology, intra-node then inter-node (default 5us,100us)
  -a, --algorithms L   comma-separated algorithms (default ring,two-level,blueconnect)
  -b SIZE, -e SIZE, -f F   sweep of sizes, as panamax-perf (default 1M, 256M, 4)
  -n N, -w N           timed and warm-up iterations per size (default 3, 1)
  -c 0|1               check every element (default 1)
  --jit-warmup N       panamax-perf --jit-warmup (default 500; small messages are slow on a limited NIC)
  --timeout S          timeout of every collective wait (default 300)
  --run-timeout S      wall-clock limit of one panamax-perf run (default 1200)
  --out DIR            keep the JSON results and logs in DIR (default: a temporary directory, removed)
  --plot FILE          draw busbw against size, one line per algorithm, to FILE (.png or .svg)
  --plot-metric M      busbw (default) or time
  --single-stream      measure one TCP stream through one limited veth (broadcast, 2 ranks on 2 nodes)
  --plumbing           check the network: allreduce with -t auto -c 1 across all ranks, transports and tc counters
  --cleanup            delete the namespaces $PREFIX-sw and $PREFIX-r<N> left by an earlier run, then exit
  -h, --help           this text
Network: namespace $PREFIX-sw holds bridge $PREFIX-br; rank r has namespace $PREFIX-r<r>, address $SUBNET.<r+1>/24
on veth $PREFIX-v<r> (bridge side: $PREFIX-b<r> in $PREFIX-sw), tbf on both ends. Master: $SUBNET.1 (rank 0).
EOF
}

die() { echo "emulate-hierarchy: $*" >&2; exit 2; }

NODES=2 RPN=2 RATE=400mbit BURST="" SHM_BW=5G ALPHA=5us,100us ALGS=ring,two-level,blueconnect
MINB=1M MAXB=256M FACTOR=4 ITERS=3 WARMUP=1 CHECK=1 JIT=500 TIMEOUT=300 RUN_TIMEOUT=1200 OUT="" MODE=sweep PLOT="" PLOT_METRIC=busbw
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=${2:?}; shift 2 ;;
    --ranks-per-node) RPN=${2:?}; shift 2 ;;
    --rate) RATE=${2:?}; shift 2 ;;
    --burst) BURST=${2:?}; shift 2 ;;
    --shm-bw) SHM_BW=${2:?}; shift 2 ;;
    --alpha) ALPHA=${2:?}; shift 2 ;;
    -a|--algorithms) ALGS=${2:?}; shift 2 ;;
    -b) MINB=${2:?}; shift 2 ;;
    -e) MAXB=${2:?}; shift 2 ;;
    -f) FACTOR=${2:?}; shift 2 ;;
    -n) ITERS=${2:?}; shift 2 ;;
    -w) WARMUP=${2:?}; shift 2 ;;
    -c) CHECK=${2:?}; shift 2 ;;
    --jit-warmup) JIT=${2:?}; shift 2 ;;
    --timeout) TIMEOUT=${2:?}; shift 2 ;;
    --run-timeout) RUN_TIMEOUT=${2:?}; shift 2 ;;
    --out) OUT=${2:?}; shift 2 ;;
    --plot) PLOT=${2:?}; shift 2 ;;
    --plot-metric) PLOT_METRIC=${2:?}; shift 2 ;;
    --single-stream) MODE=single; shift ;;
    --plumbing) MODE=plumbing; shift ;;
    --cleanup) MODE=cleanup; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

[ "$(id -u)" -eq 0 ] || die "must be run as root (it creates network namespaces, veths, a bridge and tc qdiscs); try: sudo $0"
for tool in ip tc timeout python3; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is needed (apt-get install iproute2 coreutils python3)"
done
[[ "$NODES" =~ ^[1-9][0-9]*$ && "$RPN" =~ ^[1-9][0-9]*$ ]] || die "--nodes and --ranks-per-node take positive integers"
NP=$(( NODES * RPN ))
[ "$NP" -le 250 ] || die "at most 250 ranks (one /24)"
[ "$MODE" != single ] || { [ "$NODES" -ge 2 ] || die "--single-stream needs two nodes"; }

# Short commands get 20 s; a command that hangs longer than that is a bug worth stopping for.
t() { timeout --kill-after=5 20 "$@"; }

# ---- cleanup --------------------------------------------------------------------------------

CREATED=()   # namespaces this run created, deleted by the trap in reverse order
cleanup_created() {
  local i
  for (( i=${#CREATED[@]}-1; i>=0; i-- )); do
    t ip netns delete "${CREATED[$i]}" 2>/dev/null || true
  done
  CREATED=()
}

if [ "$MODE" = cleanup ]; then
  n=0
  # Deleting a namespace deletes the veths and the bridge inside it; nothing is created outside them.
  for ns in $(t ip netns list | awk '{print $1}' | grep -E "^$PREFIX-(sw|r[0-9]+)\$" | head -n 1000 || true); do
    t ip netns delete "$ns" && n=$((n + 1)) && echo "deleted namespace $ns"
  done
  echo "emulate-hierarchy: $n namespace(s) removed"
  exit 0
fi

WORK=$OUT
if [ -z "$WORK" ]; then WORK=$(mktemp -d /tmp/pmx-emulate.XXXXXX); REMOVE_WORK=1; else mkdir -p "$WORK"; REMOVE_WORK=0; fi
on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$(type -t stop_perf)" = function ]; then stop_perf; fi
  cleanup_created
  if [ "$REMOVE_WORK" = 1 ]; then rm -rf "$WORK"; fi
  exit "$rc"
}
trap on_exit EXIT
trap 'echo "emulate-hierarchy: interrupted" >&2; exit 130' INT TERM

# ---- the network ----------------------------------------------------------------------------

# tc rate -> bytes per second (tc: bit/kbit/mbit/gbit are bits, bps/kbps/mbps/gbps bytes, powers of 1000)
rate_bytes() {
  python3 - "$1" <<'EOF'
import re, sys
m = re.fullmatch(r'([0-9.]+)\s*([kmgt]?)(bit|bps)?', sys.argv[1].lower())
if not m: sys.exit("bad rate " + sys.argv[1])
v = float(m.group(1)) * {'': 1, 'k': 1e3, 'm': 1e6, 'g': 1e9, 't': 1e12}[m.group(2)]
print(int(v / 8 if m.group(3) in (None, 'bit') else v))
EOF
}
RATE_BYTES=$(rate_bytes "$RATE") || die "cannot read --rate '$RATE'"
[ -n "$BURST" ] || BURST=$(( RATE_BYTES / 250 > 65536 ? RATE_BYTES / 250 : 65536 ))

existing=$(t ip netns list | awk '{print $1}' | grep -E "^$PREFIX-(sw|r[0-9]+)\$" || true)
[ -z "$existing" ] || die "namespaces from an earlier run exist ($(echo $existing)); remove them with: $0 --cleanup"

add_ns() { t ip netns add "$1"; CREATED+=("$1"); t ip -n "$1" link set lo up; }

setup_network() {
  local r
  echo "emulate-hierarchy: $NODES nodes x $RPN ranks, every rank's NIC limited to $RATE ($RATE_BYTES B/s) each way, burst $BURST B"
  add_ns "$PREFIX-sw"
  t ip -n "$PREFIX-sw" link add "$PREFIX-br" type bridge
  t ip -n "$PREFIX-sw" link set "$PREFIX-br" up
  for (( r=0; r<NP; r++ )); do
    add_ns "$PREFIX-r$r"
    # The pair is created inside the namespaces, so nothing is ever left in the root namespace.
    t ip -n "$PREFIX-sw" link add "$PREFIX-b$r" type veth peer name "$PREFIX-v$r" netns "$PREFIX-r$r"
    t ip -n "$PREFIX-sw" link set "$PREFIX-b$r" master "$PREFIX-br"
    t ip -n "$PREFIX-sw" link set "$PREFIX-b$r" up
    t ip -n "$PREFIX-r$r" addr add "$SUBNET.$((r + 1))/24" dev "$PREFIX-v$r"
    t ip -n "$PREFIX-r$r" link set "$PREFIX-v$r" up
    # Upload: egress of the rank's end. Download: egress of the bridge's end.
    t ip netns exec "$PREFIX-r$r" tc qdisc replace dev "$PREFIX-v$r" root tbf rate "$RATE" burst "$BURST" latency 100ms
    t ip netns exec "$PREFIX-sw" tc qdisc replace dev "$PREFIX-b$r" root tbf rate "$RATE" burst "$BURST" latency 100ms
  done
  # Every rank's link is up before anything runs (the store connection retries on its own as well).
  for (( r=0; r<NP; r++ )); do
    local ok=0 i
    for (( i=0; i<40; i++ )); do
      if t ip -n "$PREFIX-r$r" -o link show dev "$PREFIX-v$r" | grep -q 'state UP'; then ok=1; break; fi
      sleep 0.25
    done
    [ "$ok" = 1 ] || die "the link of rank $r ($PREFIX-v$r) did not come up"
  done
}

# Bytes sent by each qdisc: rank side = upload, bridge side = download.
tc_bytes() {
  local r up down
  for (( r=0; r<NP; r++ )); do
    up=$(t ip netns exec "$PREFIX-r$r" tc -s qdisc show dev "$PREFIX-v$r" | awk '/Sent/ {print $2; exit}')
    down=$(t ip netns exec "$PREFIX-sw" tc -s qdisc show dev "$PREFIX-b$r" | awk '/Sent/ {print $2; exit}')
    echo "$r ${up:-0} ${down:-0}"
  done
}

print_tc_delta() { # before-file after-file
  echo "# NIC traffic during the run (tc -s qdisc), MB = 1e6 bytes"
  printf '#  %4s %6s %12s %12s\n' rank node "upload MB" "download MB"
  awk -v rpn="$RPN" 'NR == FNR { up[$1] = $2; down[$1] = $3; next }
    { printf "   %4d %6s %12.1f %12.1f\n", $1, "node" int($1 / rpn), ($2 - up[$1]) / 1e6, ($3 - down[$1]) / 1e6 }' "$1" "$2"
}

# ---- running panamax-perf in the namespaces -------------------------------------------------

PERF="$ROOT/scripts/panamax-perf"
# Build (if stale) outside the namespaces, where Maven can reach its repository; --help exits at once.
t_build() { timeout --kill-after=10 1800 "$@"; }
t_build "$PERF" --help >/dev/null || die "panamax-perf does not build or start"
HELP=$(t "$PERF" --help 2>&1 || true)
has_flag() { grep -q -- "$1" <<<"$HELP"; }

export PMX_EMU_RPN=$RPN
# perf LOG ARGS...: panamax-perf as rank 0 in namespace r0 / node0; children through the wrapper.
# It runs in the background and is waited for, so that Ctrl-C reaches the trap at once (timeout puts
# the run in its own process group, out of reach of the terminal's signal); the trap stops it.
PERF_PID=""
perf() {
  local log=$1; shift
  local status=0
  timeout --kill-after=15 "$RUN_TIMEOUT" ip netns exec "$PREFIX-r0" env PANAMAX_NODE=node0 PANAMAX_MASTER_ADDR="$SUBNET.1" \
    PANAMAX_RANK_WRAPPER="$SELF --rank-exec {rank}" "$PERF" "$@" >"$log" 2>&1 &
  PERF_PID=$!
  wait "$PERF_PID" || status=$?
  PERF_PID=""
  return "$status"
}
stop_perf() { # TERM reaches rank 0 through timeout; rank 0 stops its children; KILL after 10 s
  [ -n "$PERF_PID" ] || return 0
  kill -TERM "$PERF_PID" 2>/dev/null || true
  local i
  for (( i=0; i<20; i++ )); do kill -0 "$PERF_PID" 2>/dev/null || break; sleep 0.5; done
  kill -KILL "$PERF_PID" 2>/dev/null || true
  PERF_PID=""
}

setup_network

if [ "$MODE" = single ]; then
  # Rank 0 on node0, rank 1 on node1 (rank RPN's namespace is used so node numbering stays r / RPN).
  export PMX_EMU_RPN=1
  echo "emulate-hierarchy: one TCP stream rank 0 -> rank 1 through two $RATE veths (broadcast, np 2, -t tcp)"
  tc_bytes >"$WORK/tc0"
  status=0
  perf "$WORK/single.log" broadcast -np 2 -t tcp -b 4M -e 64M -f 4 -n "$ITERS" -w "$WARMUP" -c "$CHECK" \
    --jit-warmup "$JIT" --timeout "$TIMEOUT" --json "$WORK/single.json" || status=$?
  cat "$WORK/single.log"
  tc_bytes >"$WORK/tc1"
  RPN=1 print_tc_delta "$WORK/tc0" "$WORK/tc1"
  [ "$status" = 0 ] || die "panamax-perf failed with status $status"
  python3 - "$WORK/single.json" "$RATE_BYTES" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); limit = int(sys.argv[2])
best = max(d["rows"], key=lambda r: r["size"])
rate = best["size"] / (best["timeUs"] * 1e-6)
print(f"single-stream size={best['size'] >> 20}MiB rate={rate / 1e6:.1f}MB/s ({rate * 8 / 1e6:.0f} Mbit/s) "
      f"= {100 * rate / limit:.1f}% of the tbf rate {limit / 1e6:.1f}MB/s; links {','.join(d['environment']['links'])}")
EOF
  exit 0
fi

if [ "$MODE" = plumbing ]; then
  echo "emulate-hierarchy: allreduce -np $NP -t auto -c 1 over the emulated network (current panamax-perf flags)"
  tc_bytes >"$WORK/tc0"
  status=0
  perf "$WORK/plumbing.log" allreduce -np "$NP" -t auto -b "$MINB" -e "$MAXB" -f "$FACTOR" -n "$ITERS" -w "$WARMUP" -c 1 \
    --jit-warmup "$JIT" --timeout "$TIMEOUT" --json "$WORK/plumbing.json" || status=$?
  cat "$WORK/plumbing.log"
  tc_bytes >"$WORK/tc1"
  print_tc_delta "$WORK/tc0" "$WORK/tc1"
  [ "$status" = 0 ] || die "panamax-perf failed with status $status"
  python3 -c 'import json,sys; print("# rank 0 reaches its peers over:", ",".join(json.load(open(sys.argv[1]))["environment"]["links"]))' \
    "$WORK/plumbing.json"
  exit 0
fi

# ---- the sweep ------------------------------------------------------------------------------

TOPO="${RPN}x${NODES}:bw=${SHM_BW},${RATE_BYTES}:alpha=${ALPHA}"
extra=()
if has_flag --topology; then extra+=(--topology "$TOPO"); else echo "emulate-hierarchy: panamax-perf has no --topology; running without it" >&2; fi
# One run per algorithm (the per-algorithm JSON files stay simple); an algorithm this build
# does not know is reported and left out of the table.
IFS=, read -r -a alg_list <<<"$ALGS"
[ "${#alg_list[@]}" -le 16 ] || die "at most 16 algorithms"
ran=()
failed=0
for alg in "${alg_list[@]}"; do
  echo "emulate-hierarchy: allreduce -a $alg, np $NP (-t auto), sizes $MINB..$MAXB x$FACTOR, -n $ITERS -w $WARMUP -c $CHECK"
  tc_bytes >"$WORK/tc0"
  status=0
  perf "$WORK/$alg.log" allreduce -np "$NP" -t auto -a "$alg" "${extra[@]}" -b "$MINB" -e "$MAXB" -f "$FACTOR" \
    -n "$ITERS" -w "$WARMUP" -c "$CHECK" --jit-warmup "$JIT" --timeout "$TIMEOUT" --json "$WORK/$alg.json" || status=$?
  tc_bytes >"$WORK/tc1"
  grep -v '^\[' "$WORK/$alg.log" | sed 's/^/  /' || true
  if [ "$status" = 0 ] && [ -s "$WORK/$alg.json" ]; then
    ran+=("$alg")
    print_tc_delta "$WORK/tc0" "$WORK/tc1" | sed 's/^/  /'
  elif [ "$status" = 2 ]; then
    echo "emulate-hierarchy: panamax-perf refused -a $alg (status 2: not in this build?); left out" >&2
  else
    failed=1
    echo "emulate-hierarchy: -a $alg failed (status $status: 1 wrong results, 3 run failed, 124/137 past --run-timeout $RUN_TIMEOUT s); left out" >&2
  fi
done

python3 - "$WORK" "$NP" "${alg_list[@]}" <<'EOF'
import json, os, sys
work, np, algs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
runs = {}
for a in algs:
    p = os.path.join(work, a + ".json")
    if os.path.exists(p) and os.path.getsize(p) > 0:
        try:
            runs[a] = {r["size"]: r for r in json.load(open(p))["rows"]}
        except (ValueError, KeyError):
            pass
def pred(row):  # the cost model's prediction that panamax-perf puts in each JSON row
    for k in ("predictedUs", "predictedTimeUs", "modelUs"):
        if isinstance(row.get(k), (int, float)):
            return row[k]
    return None
has_pred = any(pred(r) is not None for rows in runs.values() for r in rows.values())
sizes = sorted({s for rows in runs.values() for s in rows})
def mib(s):
    return f"{s / 2**20:g}MiB" if s >= 2**20 else f"{s / 2**10:g}KiB" if s >= 2**10 else f"{s}B"
head = f"{'size':>10}"
for a in algs:
    head += f" {a + ' us':>18} {'busbw GB/s':>11}" + (f" {'predicted us':>13}" if has_pred else "")
print("#")
print("# all-reduce over " + str(np) + " ranks, time per iteration (max over ranks) and busbw")
print(head)
for s in sizes:
    line = f"{mib(s):>10}"
    for a in algs:
        r = runs.get(a, {}).get(s)
        line += f" {r['timeUs']:>18.1f} {r['busBw']:>11.4f}" if r else f" {'n/a':>18} {'n/a':>11}"
        if has_pred:
            p = pred(r) if r else None
            line += f" {p:>13.1f}" if p is not None else f" {'n/a':>13}"
    print(line)
def t64(a):
    r = runs.get(a, {}).get(64 << 20)
    return r["timeUs"] if r else None
def ratio(a, b):
    x, y = t64(a), t64(b)
    return f"{x / y:.3f}" if x and y else "n/a"
if has_pred:
    errs = []
    for a in algs:
        r = runs.get(a, {}).get(64 << 20)
        p = pred(r) if r else None
        if p:
            errs.append(f"{a}={p / r['timeUs']:.2f}")
    print("# model/measured at 64MiB: " + " ".join(errs))
print(f"ratio blueconnect/ring={ratio('blueconnect', 'ring')} blueconnect/two-level={ratio('blueconnect', 'two-level')} size=64MiB")
EOF
[ "${#ran[@]}" -gt 0 ] || { echo "emulate-hierarchy: no algorithm ran" >&2; exit 1; }
if [ -n "$PLOT" ]; then
  jsons=$(printf "$WORK/%s.json," "${ran[@]}")
  t "$PERF" --plot-from "${jsons%,}" --plot "$PLOT" --plot-metric "$PLOT_METRIC" >/dev/null \
    && echo "# plot: $PLOT" || echo "emulate-hierarchy: drawing $PLOT failed" >&2
fi
exit "$failed"
