# Sourced by scripts/train-example and scripts/wfbp-bench: builds the bench module (where the
# training example and the WFBP benchmark live) and the library modules it depends on when a source
# or pom is newer than the last build, and sets PANAMAX_ML_CP to the class path of the build (the
# modules' target/classes).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
panamax_ml_stamp="$PANAMAX_ROOT/bench/target/.script-build"
panamax_ml_modules="bindings memory verbs cuda collectives ml bench"

panamax_ml_stale() {
  [ -f "$panamax_ml_stamp" ] || return 0
  local m
  for m in $panamax_ml_modules; do
    [ -n "$(find "$PANAMAX_ROOT/$m/src/main" "$PANAMAX_ROOT/$m/pom.xml" -type f -newer "$panamax_ml_stamp" -print -quit 2>/dev/null)" ] && return 0
  done
  [ "$PANAMAX_ROOT/pom.xml" -nt "$panamax_ml_stamp" ]
}

panamax_ml_build() {
  if panamax_ml_stale; then
    panamax_require_mvn
    echo "$(basename "$0"): building (mvn -q -B -pl bench -am compile)" >&2
    (cd "$PANAMAX_ROOT" && mvn -q -B -Dstyle.color=never -pl bench -am compile ${PANAMAX_MVN_OPTS:-}) >&2 \
      || { echo "$(basename "$0"): the build failed" >&2; exit 2; }
    touch "$panamax_ml_stamp"
  fi
  PANAMAX_ML_CP=""
  local m
  for m in $panamax_ml_modules; do
    PANAMAX_ML_CP="$PANAMAX_ML_CP${PANAMAX_ML_CP:+:}$PANAMAX_ROOT/$m/target/classes"
  done
}
