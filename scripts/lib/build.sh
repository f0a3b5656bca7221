# Sourced by the scripts that need the project built: the one place that knows how to build it.
#   panamax_bench_jar           builds bench/target/panamax-bench.jar (the benchmarks, panamax-perf, the
#                               example and every library module, shaded) when it is missing or older
#                               than a source or pom, and sets PANAMAX_BENCH_JAR to it
#   panamax_mvn_quiet LOG ARGS  runs mvn ARGS quietly into LOG: offline first (the usual case after a
#                               build), then online for what is not cached yet; prints LOG's tail on failure
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PANAMAX_BENCH_JAR="$PANAMAX_ROOT/bench/target/panamax-bench.jar"

panamax_bench_jar_stale() {
  [ -f "$PANAMAX_BENCH_JAR" ] || return 0
  [ -n "$(find "$PANAMAX_ROOT" -path "$PANAMAX_ROOT/.git" -prune -o -path '*/target' -prune -o \
            \( -path '*/src/main/*' -o -name pom.xml \) -type f -newer "$PANAMAX_BENCH_JAR" -print -quit 2>/dev/null)" ]
}

panamax_bench_jar() {
  if panamax_bench_jar_stale; then
    panamax_require_mvn
    echo "$(basename "$0"): building the project (mvn -q -B -pl bench -am package -DskipTests)" >&2
    # shellcheck disable=SC2086
    (cd "$PANAMAX_ROOT" && mvn -q -B -Dstyle.color=never -pl bench -am package -DskipTests ${PANAMAX_MVN_OPTS:-}) >&2 \
      || { echo "$(basename "$0"): the build failed" >&2; exit 2; }
  fi
}

panamax_mvn_quiet() {
  local log="$1"
  shift
  panamax_require_mvn
  (cd "$PANAMAX_ROOT" && { mvn -B -q -o -Dstyle.color=never "$@" > "$log" 2>&1 \
    || mvn -B -q -Dstyle.color=never "$@" > "$log" 2>&1; }) \
    || { echo "$(basename "$0"): mvn $* failed:" >&2; tail -20 "$log" >&2; return 1; }
}
