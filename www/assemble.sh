#!/bin/sh
# Copy the web demo's own files and its vendored chart library into DIST (the built site).
# Usage: sh www/assemble.sh DIST        (run from anywhere; DIST is created if missing)
# Also copies the two wasm builds (www/pkg, and www/pkg-relaxed's .wasm: see www/cpu-build.js);
# leaves DIST/models and DIST/data alone: build.sh puts those there.
set -eu

if [ $# -ne 1 ]; then
  echo "usage: $0 DIST" >&2
  exit 2
fi
DIST=$1
WWW=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$WWW/.." && pwd)
CHART="$ROOT/node_modules/chart.js"

# The site's own files (static: no build step): the page's modules in app/, the rest at the top.
SCRIPTS="$(cd "$WWW" && echo *.js app/*.js)"
FILES="index.html style.css favicon.svg bench.html $SCRIPTS"

# Guards for the Content-Security-Policy (no 'unsafe-inline'): no inline scripts, no inline
# event handlers, no style attributes; user text never goes through innerHTML.
fail=0
if grep -nE '<script(\s[^>]*)?>' "$WWW/index.html" | grep -vE '<script[^>]*\ssrc=' >&2; then
  echo "assemble.sh: inline <script> in index.html (CSP forbids it)" >&2; fail=1
fi
if grep -niE '\sstyle=|\son[a-z]+=' "$WWW/index.html" >&2; then
  echo "assemble.sh: style= or on*= attribute in index.html (CSP forbids it)" >&2; fail=1
fi
for f in $SCRIPTS; do
  if grep -nE 'innerHTML|outerHTML|insertAdjacentHTML|document\.write|setAttribute\(.style|\beval\(|new Function' "$WWW/$f" >&2; then
    echo "assemble.sh: $f uses an API the CSP / XSS rules forbid" >&2; fail=1
  fi
done
[ "$fail" -eq 0 ] || exit 1

if [ ! -f "$CHART/dist/chart.umd.min.js" ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "assemble.sh: node_modules missing, running npm ci in $ROOT" >&2
    (cd "$ROOT" && npm ci --no-audit --no-fund)
  fi
fi
if [ ! -f "$CHART/dist/chart.umd.min.js" ]; then
  echo "assemble.sh: $CHART/dist/chart.umd.min.js not found: run 'npm ci' at the repository root" >&2
  exit 1
fi

mkdir -p "$DIST/vendor" "$DIST/app"
for f in $FILES; do
  cp "$WWW/$f" "$DIST/$f"
done
cp "$CHART/dist/chart.umd.min.js" "$CHART/dist/chart.umd.min.js.map" "$DIST/vendor/"
cp "$CHART/LICENSE.md" "$DIST/vendor/chart.js.LICENSE.md"
# --- issue 15: the two CPU builds. One JS glue runs either .wasm, so the relaxed build must
# export exactly what the plain one does (same Rust API: no export under a cfg of its own).
# Only the code is compared: wasm-bindgen's comments quote function-table indices, which
# shift when the relaxed build compiles code of its own (its kernel).
for pkg in pkg pkg-relaxed; do
  if [ ! -f "$WWW/$pkg/sr_bench_bg.wasm" ]; then
    echo "assemble.sh: www/$pkg is not built: run ./build.sh build (wasm-pack, see build_wasm)" >&2; exit 1
  fi
done
glue_code() { grep -v '^[[:space:]]*//' "$WWW/$1/sr_bench.js"; }
if ! diff -q <(glue_code pkg) <(glue_code pkg-relaxed) > /dev/null; then
  echo "assemble.sh: www/pkg and www/pkg-relaxed have different JS glue (sr_bench.js): the two builds" >&2
  echo "  must export the same API (is one of them stale? rebuild both: ./build.sh build)" >&2
  exit 1
fi
rm -rf "$DIST/pkg" "$DIST/pkg-relaxed"
cp -r "$WWW/pkg" "$DIST/pkg"
mkdir -p "$DIST/pkg-relaxed" && cp "$WWW/pkg-relaxed/sr_bench_bg.wasm" "$DIST/pkg-relaxed/"
# --- end issue 15
# --- issue 13: offline class mode. DIST/sw.js gets the list of files it stores (the page, the
# engine, the benchmark data, the model list; never the models: see www/sw.js) and a build id
# from their contents. Hashed from the sources build.sh copies (www/pkg, data/, www/models), so
# the id is right whether they are in DIST yet or not; a new build means a new id, and the
# browser replaces the stored copy.
PRECACHE_SHELL="index.html style.css favicon.svg bench.html $(echo "$SCRIPTS" | tr ' ' '\n' | grep -vx 'sw.js' | tr '\n' ' ')vendor/chart.umd.min.js"
PRECACHE_DATA="pkg/sr_bench.js pkg/sr_bench_bg.wasm pkg-relaxed/sr_bench_bg.wasm data/sr/stsb.csv data/sr/sickr.csv data/sr/askubuntu.csv data/sr/cqa.csv data/sr/twitter.csv data/sr/biosses.csv data/stsb/stsb-en-test.csv models/manifest.json"
source_of() {
  case $1 in
    vendor/chart.umd.min.js) echo "$CHART/dist/chart.umd.min.js" ;;
    data/*) echo "$ROOT/$1" ;;
    *) echo "$WWW/$1" ;;
  esac
}
if command -v sha256sum >/dev/null 2>&1; then SHA="sha256sum"; else SHA="shasum -a 256"; fi
BUILD_ID=$(for f in $PRECACHE_SHELL $PRECACHE_DATA; do
  src=$(source_of "$f")
  if [ -f "$src" ]; then echo "$f $($SHA < "$src" | cut -c1-64)"; else echo "$f missing"; fi
done | $SHA | cut -c1-16)
PRECACHE_JSON=$(for f in $PRECACHE_SHELL $PRECACHE_DATA; do printf '"%s",' "$f"; done | sed 's/,$//')
sed -e "s|^const BUILD = .*|const BUILD = '$BUILD_ID';|" -e "s|^const PRECACHE = .*|const PRECACHE = [$PRECACHE_JSON];|" \
  "$WWW/sw.js" > "$DIST/sw.js"
# --- end issue 13: offline class mode

echo "assemble.sh: web demo copied into $DIST (chart.js $(node -p "require('$CHART/package.json').version" 2>/dev/null || echo '?'))"
