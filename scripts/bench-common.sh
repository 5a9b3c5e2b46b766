# shellcheck shell=bash
# Sourced by the bench scripts that drive tsbsctl against the testbed: builds the release
# binaries unless BIN (the directory holding tsbsctl and testbed) is given, starts the release
# mirror in the background (its environment exported), removes DIR and stops the mirror and
# any SERVER (a `tsbsctl ... serve` the script started) on exit, and sets T (the quiet
# tsbsctl), PORT (a free port) and URL. Needs DIR (a fresh directory). Offers
# greptime_workspace.
if [ -z "${BIN:-}" ]; then
  cargo build -q --release -p tsbsctl --bin tsbsctl
  cargo build -q --release -p testbed --bin testbed
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release
fi
export TESTBED_BIN=$BIN/testbed

"$BIN/testbed" serve --dir "$DIR/serve" >"$DIR/mirror.env" 2>"$DIR/mirror.err" &
MIRROR=$!
SERVER=
cleanup() {
  [ -n "$SERVER" ] && { kill -INT "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
  kill "$MIRROR" 2>/dev/null || true
  wait "$MIRROR" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
for _ in $(seq 100); do grep -q TSBSCTL_GO_VERSION "$DIR/mirror.env" 2>/dev/null && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$DIR/mirror.env"
export TSBSCTL_ROOT=$DIR/root
# shellcheck disable=SC2034 # used by the scripts that source this one
T="$BIN/tsbsctl --quiet"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# shellcheck disable=SC2034
URL=http://127.0.0.1:$PORT

# greptime_workspace ID [data generate flags]: after `env prepare`, a GreptimeDB workspace ID
# on PORT and a dataset ID in the influx format from the smoke profile (the flags change it);
# then says what machine measures.
greptime_workspace() {
  local id=$1
  shift
  $T greptimedb prepare --database-id "$id" --http-port "$PORT" >/dev/null
  $T data generate --format influx --profile smoke --dataset-id "$id" "$@" >/dev/null
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
