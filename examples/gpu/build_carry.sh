#!/usr/bin/env bash
# Builds the carry folder for a GPU machine that has Python and torch but no network and no fairseq
# (examples/gpu/run.sh installs it there): run here, where pip can download, after the Tanaka preparation.
#
#   bash examples/gpu/build_carry.sh [TANAKA_WORK]      # default: work/tanaka-ja-en (prepare.sh's WORK)
#
# Writes CARRY [.carry] (git-ignored; copied with the checkout to the GPU machine):
#   wheels/                   hydra-core, omegaconf, antlr4 (built here: its release is a source archive),
#                             bitarray (built for the GPU machine's Python), subword-nmt, sacremoses, mock, nltk and
#                             regex (RIBES: nltk.translate imports regex), sacreBLEU at this environment's
#                             version with lxml, portalocker, tabulate, colorama (the machine's own sacreBLEU, if
#                             any, of unknown version: the paired bootstrap needs 2.x, and the scores match
#                             the CPU tables' when the version does)
#   fairseq_fixed-*.tar.gz    fairseq's source (install.py builds the parts fairseq-syntax uses)
#   tanaka/                   the recipe's WORK reduced to what training and scoring read: main/data-bin,
#                             main/work/test.tok.{ja,en}, raw/test.{ja,en}
#   manifest.txt              every file and its SHA-256 (run.sh installs again when it changes)
# PYTHON_VERSION (the GPU machine's Python, default 3.12) picks the compiled wheels; LIMIT_MIB, where set, the most
# the carry may weigh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TANAKA_WORK="${1:-$ROOT/work/tanaka-ja-en}"
CARRY="${CARRY:-$ROOT/.carry}"
PYTHON_VERSION="${PYTHON_VERSION:-3.12}"
# shellcheck disable=SC1091
source "$ROOT/examples/setup_env.sh"
say() { echo "[build_carry] $*" >&2; }
for f in main/data-bin/preparation.json main/work/test.tok.ja main/work/test.tok.en raw/test.ja raw/test.en; do
  [ -f "$TANAKA_WORK/$f" ] || { say "error: $TANAKA_WORK/$f missing: run examples/tanaka-ja-en/prepare.sh (WORK=$TANAKA_WORK)"; exit 1; }
done
rm -rf "$CARRY.tmp"; mkdir -p "$CARRY.tmp/wheels"
pip="python -m pip --disable-pip-version-check -q"
abi="cp${PYTHON_VERSION/./}"
$pip download --no-deps --only-binary=:all: --python-version "$PYTHON_VERSION" --implementation cp --abi "$abi" \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
  -d "$CARRY.tmp/wheels" bitarray hydra-core==1.3.2 omegaconf==2.3.0 subword-nmt sacremoses mock "nltk>=3.10.4" regex \
  "sacrebleu==$(python -c 'import sacrebleu; print(sacrebleu.__version__)')" lxml portalocker tabulate colorama
$pip wheel --no-deps -w "$CARRY.tmp/wheels" antlr4-python3-runtime==4.9.3
$pip download --no-deps --no-binary :all: --no-build-isolation -d "$CARRY.tmp" fairseq-fixed==0.12.3.1
say "wheels: $(ls "$CARRY.tmp/wheels" | tr '\n' ' ')"
t="$CARRY.tmp/tanaka"
mkdir -p "$t/main/work" "$t/raw"
cp -r "$TANAKA_WORK/main/data-bin" "$t/main/"
rm -f "$t/main/data-bin/.prepared"
touch "$t/main/data-bin/.prepared"
cp "$TANAKA_WORK"/main/work/test.tok.{ja,en} "$t/main/work/"
cp "$TANAKA_WORK"/raw/test.{ja,en} "$t/raw/"
touch "$t/raw/.complete"
(cd "$CARRY.tmp" && find . -type f ! -name manifest.txt | sort | xargs sha256sum > manifest.txt)
rm -rf "$CARRY"; mv "$CARRY.tmp" "$CARRY"
size=$(du -sm "$CARRY" | cut -f1)
say "$CARRY: ${size} MiB ($(wc -l < "$CARRY/manifest.txt") files); with the checkout, what the GPU machine needs"
# a job that may copy only so much: LIMIT_MIB (stage.sh checks the carry and the working tree together)
[ -z "${LIMIT_MIB:-}" ] || [ "$size" -le "$LIMIT_MIB" ] || { say "error: $CARRY is ${size} MiB, over LIMIT_MIB=$LIMIT_MIB"; exit 1; }
