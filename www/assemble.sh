#!/bin/sh
# Copy the web demo's own files and its vendored chart library into DIST (the built site).
# Usage: sh www/assemble.sh DIST        (run from anywhere; DIST is created if missing)
# Also copies the wasm build (www/pkg); leaves DIST/models and DIST/data alone: build.sh puts
# those there. The benchmark pages are no part of the site: bench/site.sh adds them to a copy.
set -eu

if [ $# -ne 1 ]; then
  echo "usage: $0 DIST" >&2
  exit 2
fi
DIST=$1
WWW=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$WWW/.." && pwd)
CHART="$ROOT/node_modules/chart.js"

# The site's own files (static: no build step), laid out by thread: page/ (the page only),
# engine/ (the engine worker and its helpers), shared/ (both); the service worker sw.js stays
# at the top (its scope is the site root).
SCRIPTS="$(cd "$WWW" && echo *.js page/*.js engine/*.js shared/*.js)"
FILES="index.html style.css favicon.svg $SCRIPTS"

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

# A DIST of an older layout may hold scripts at its top, app/ or the benchmark page: not ours now.
rm -rf "$DIST/app" "$DIST/page" "$DIST/engine" "$DIST/shared" "$DIST/bench.html" "$DIST"/*.js
mkdir -p "$DIST/vendor" "$DIST/page" "$DIST/engine" "$DIST/shared"
for f in $FILES; do
  cp "$WWW/$f" "$DIST/$f"
done
cp "$CHART/dist/chart.umd.min.js" "$CHART/dist/chart.umd.min.js.map" "$DIST/vendor/"
cp "$CHART/LICENSE.md" "$DIST/vendor/chart.js.LICENSE.md"
if [ ! -f "$WWW/pkg/sr_bench_bg.wasm" ]; then
  echo "assemble.sh: www/pkg is not built: run ./build.sh build (wasm-pack, see build_wasm)" >&2; exit 1
fi
# The class API's answer where no `sr-bench serve --class` stands behind the site (a static
# host, or plain `serve`): page/class.js reads api/class and finds no class server, without a
# 404 in the console. `serve --class` answers the same path itself: {"class": true, …}.
mkdir -p "$DIST/api" && printf '{"class": false}\n' > "$DIST/api/class"
rm -rf "$DIST"/pkg "$DIST"/pkg-* # pkg-*: the second wasm build of an older layout
cp -r "$WWW/pkg" "$DIST/pkg"
# Offline class mode: DIST/sw.js gets the list of files it stores (the page, the engine, the
# benchmark data, the model list; never the models: see www/sw.js) and a build id
# from their contents. Hashed from the sources build.sh copies (www/pkg, data/, www/models), so
# the id is right whether they are in DIST yet or not; a new build means a new id, and the
# browser replaces the stored copy.
PRECACHE_SHELL="index.html style.css favicon.svg $(echo "$SCRIPTS" | tr ' ' '\n' | grep -vx 'sw.js' | tr '\n' ' ')vendor/chart.umd.min.js"
# The data files as the engine fetches them: shared/protocol.js's ALL_DATA_PATHS, the one list.
DATA_PATHS=$(cd "$WWW" && node --input-type=module -e "import('./shared/protocol.js').then((m) => console.log(m.ALL_DATA_PATHS.join(' ')))")
[ -n "$DATA_PATHS" ] || { echo "assemble.sh: could not read ALL_DATA_PATHS from www/shared/protocol.js" >&2; exit 1; }
PRECACHE_DATA="pkg/sr_bench.js pkg/sr_bench_bg.wasm $DATA_PATHS models/manifest.json"
# The Results view's table, when build.sh made it (`sr-bench results`) before calling us.
[ ! -f "$DIST/results.json" ] || PRECACHE_DATA="$PRECACHE_DATA results.json"
source_of() {
  case $1 in
    vendor/chart.umd.min.js) echo "$CHART/dist/chart.umd.min.js" ;;
    data/*) echo "$ROOT/$1" ;;
    results.json) echo "$DIST/$1" ;;
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

echo "assemble.sh: web demo copied into $DIST (chart.js $(node -p "require('$CHART/package.json').version" 2>/dev/null || echo '?'))"
