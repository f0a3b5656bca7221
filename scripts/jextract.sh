#!/usr/bin/env bash
# Regenerates the jextract bindings of the bindings module:
#   dev.panamax.bindings.verbs  from infiniband/verbs.h (Debian's libibverbs-dev)
#   dev.panamax.bindings.cuda   from cuda.h (CUDA 13 toolkit headers)
#   dev.panamax.bindings.nccl   from bindings/src/main/native/nccl/nccl.h (the project's own header)
# Filtering lives in bindings/jextract/{verbs,cuda,nccl}.args.
#
# Usage: scripts/jextract.sh [verbs] [cuda] [nccl]     (default: all three)
# Environment:
#   JEXTRACT        the jextract launcher (default: jextract on PATH)
#   VERBS_INCLUDE   directory holding infiniband/verbs.h (default /usr/include)
#   CUDA_INCLUDE    directory holding cuda.h (default: $CUDA_HOME/include, /usr/local/cuda/include)
#
# After generation the script makes the output deterministic and machine-independent:
#   - the generated symbol lookup (SymbolLookup.libraryLookup at class initialisation) is
#     replaced by the lazy loader dev.panamax.bindings.NativeLibrary.<LIB>.lookup();
#   - absolute paths (none are expected) make the script fail rather than be committed.
# Only *.java files directly in the three generated packages are replaced, except their hand-written
# package-info.java; the hand-written sub-packages (for example dev.panamax.bindings.verbs.support) are
# left alone.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

die() { echo "jextract.sh: $*" >&2; exit 1; }

JEXTRACT_BIN="${JEXTRACT:-}"
if [ -z "$JEXTRACT_BIN" ]; then
  JEXTRACT_BIN="$(command -v jextract 2>/dev/null || true)"
fi
if [ -z "$JEXTRACT_BIN" ] || [ ! -x "$JEXTRACT_BIN" ]; then
  die "no jextract found: set JEXTRACT to the jextract launcher or put jextract on PATH (docs/reference/bindings.md explains how to build it: openjdk/jextract with libclang 14)."
fi
command -v perl >/dev/null 2>&1 || die "perl is needed for post-processing"

MODULE="$PANAMAX_ROOT/bindings"
SRC="$MODULE/src/main/java"
ARGS_DIR="$MODULE/jextract"

VERBS_INCLUDE="${VERBS_INCLUDE:-/usr/include}"
if [ -z "${CUDA_INCLUDE:-}" ]; then
  CUDA_INCLUDE=/usr/local/cuda/include
  if [ -n "${CUDA_HOME:-}" ] && [ -f "$CUDA_HOME/include/cuda.h" ]; then CUDA_INCLUDE="$CUDA_HOME/include"; fi
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# generate <name> <header> <enum constant of NativeLibrary> <extra jextract args...>
generate() {
  local name="$1" header="$2" lib="$3"; shift 3
  local pkgdir="dev/panamax/bindings/$name"
  [ -f "$header" ] || die "$name: header $header not found"
  echo "jextract.sh: $name <- $header" >&2
  mkdir -p "$WORK/cwd-$name" "$WORK/out-$name"
  # jextract adds its working directory to the include path and reads ./compile_flags.txt:
  # run it in an empty directory so that nothing from the caller's directory leaks in.
  ( cd "$WORK/cwd-$name" && "$JEXTRACT_BIN" --output "$WORK/out-$name" "$@" @"$ARGS_DIR/$name.args" "$header" ) \
    > "$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log" >&2; die "$name: jextract failed"; }
  # warnings about declarations jextract skips (long double, unsupported types) are expected
  grep -v 'warning: Skipping' "$WORK/$name.log" >&2 || true

  local out="$WORK/out-$name/$pkgdir"
  [ -f "$out/${name}_h.java" ] || die "$name: jextract produced no ${name}_h.java"

  # Lazy loading: replace the eager library lookup of the header class.
  LIB="$lib" perl -0777 -pi -e '
    my $n = s{\n    static final Arena LIBRARY_ARENA = Arena\.ofAuto\(\);\n}{\n}s;
    my $m = s{    static final SymbolLookup SYMBOL_LOOKUP = SymbolLookup\.libraryLookup\([^;]*?\)\n\s*\.or\(SymbolLookup\.loaderLookup\(\)\)\n\s*\.or\(Linker\.nativeLinker\(\)\.defaultLookup\(\)\);}{    // Loaded lazily, on the first call into the library (hand-written: dev.panamax.bindings.NativeLibrary).\n    static final SymbolLookup SYMBOL_LOOKUP = dev.panamax.bindings.NativeLibrary.$ENV{LIB}.lookup();}s;
    die "SYMBOL_LOOKUP initializer not found\n" unless $n == 1 && $m == 1;
  ' "$out/${name}_h.java" || die "$name: could not rewrite the symbol lookup (jextract output format changed?)"
  if grep -q 'libraryLookup\|LIBRARY_ARENA' "$out"/*.java; then die "$name: an eager library lookup is left in the output"; fi

  # No absolute paths of this machine may end up in the sources.
  if grep -nE '(/usr/|/opt/|/home/|/tmp/|/work/|'"$PANAMAX_ROOT"')' "$out"/*.java >&2; then
    die "$name: absolute paths in the generated sources (see above)"
  fi

  mkdir -p "$SRC/$pkgdir"
  find "$SRC/$pkgdir" -maxdepth 1 -type f -name '*.java' ! -name package-info.java -delete
  cp "$out"/*.java "$SRC/$pkgdir/"
  echo "jextract.sh: $name: $(ls "$out" | wc -l) files in $pkgdir" >&2
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(verbs cuda nccl)
for t in "${targets[@]}"; do
  case "$t" in
    verbs) generate verbs "$VERBS_INCLUDE/infiniband/verbs.h" IBVERBS ;;
    cuda)  generate cuda  "$CUDA_INCLUDE/cuda.h" CUDA ;;
    nccl)  generate nccl  "$MODULE/src/main/native/nccl/nccl.h" NCCL ;;
    *) die "unknown target '$t' (expected verbs, cuda or nccl)" ;;
  esac
done
