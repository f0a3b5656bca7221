# Sourced by the other scripts: finds a JDK >= 25 and the repository root.
# Order: $JAVA_HOME if it is 25 or newer, else the newest JDK >= 25 under /usr/lib/jvm.
source "$(dirname "${BASH_SOURCE[0]}")/usage.sh"

PANAMAX_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

panamax_java_feature() { # prints the feature version of the JDK at $1, or nothing
  local v
  v=$("$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')
  echo "${v%%.*}"
}

panamax_find_jdk() {
  local cand v
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    v=$(panamax_java_feature "$JAVA_HOME")
    if [ -n "$v" ] && [ "$v" -ge 25 ]; then return 0; fi
  fi
  for cand in $(ls -d /usr/lib/jvm/*/ 2>/dev/null | sort -rV); do
    cand=${cand%/}
    [ -x "$cand/bin/javac" ] || continue
    v=$(panamax_java_feature "$cand")
    if [ -n "$v" ] && [ "$v" -ge 25 ]; then export JAVA_HOME="$cand"; return 0; fi
  done
  echo "panamax: no JDK 25 or later found (JAVA_HOME=${JAVA_HOME:-unset}, nothing >= 25 under /usr/lib/jvm)." >&2
  echo "panamax: install one (for example Temurin 25) and point JAVA_HOME at it." >&2
  return 1
}

panamax_find_jdk || exit 1
export PATH="$JAVA_HOME/bin:$PATH"

panamax_require_mvn() {
  if ! command -v mvn >/dev/null 2>&1; then
    echo "panamax: Maven not found; installing it with apt-get" >&2
    (apt-get update -qq && apt-get install -y -qq maven) >&2 || { echo "panamax: could not install Maven" >&2; exit 1; }
  fi
}
