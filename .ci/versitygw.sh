#!/usr/bin/env bash
# Builds a real S3 server, versitygw v1.8.0 (an S3 gateway over a directory: its `posix`
# backend), from the Go module proxy, for the object-storage tests (`TSBSCTL_TEST_VERSITYGW`).
#
# The result is cached OUTSIDE the clone, in
#   ${TSBSCTL_CI_CACHE:-$HOME/.cache/tsbsctl-ci}/versitygw-1.8.0/versitygw
# with a stamp of every input (module and its sum, Go, flags, recipe); a rerun whose stamp
# matches takes seconds, any change rebuilds. The binary is linked under a temporary name and
# renamed into place, and the stamp is written last, so a half build is never taken for a
# finished one. Progress goes to stderr; the last line on stdout is the binary's path.
set -euo pipefail

MODULE=github.com/versity/versitygw
VERSION=v1.8.0
PKG=$MODULE/cmd/versitygw
# Bump when the recipe below changes in a way the other inputs do not show.
RECIPE=1

cache_root=${TSBSCTL_CI_CACHE:-$HOME/.cache/tsbsctl-ci}
dir="$cache_root/versitygw-${VERSION#v}"
out="$dir/versitygw"
stamp="$dir/versitygw.stamp"

say() { printf 'versitygw.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

for tool in go flock; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not on PATH; building versitygw needs Go and flock"
done

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

info=$(go mod download -json "$MODULE@$VERSION") || die "go mod download $MODULE@$VERSION failed"
mod_sum=$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",\{0,1\}$/\1/p' | head -n1)
[ -n "$mod_sum" ] || die "no Sum in: $info"

inputs=$(cat <<EOT
recipe=$RECIPE
module=$MODULE@$VERSION $mod_sum
go=$(go version)
goflags=${GOFLAGS:-}
EOT
)

if [ -x "$out" ] && [ -f "$stamp" ] && [ "$(sed '/^built_in=/d' "$stamp")" = "$inputs" ]; then
  say "cached: $out ($(sed -n 's/^built_in=//p' "$stamp"))"
  printf '%s\n' "$out"
  exit 0
fi

build="$dir/build"
kind="cold build"
[ -d "$build/gocache" ] && kind="rebuild over the previous build's caches"
say "building versitygw $VERSION into $dir ($kind; log: $dir/build.log)"
start=$(date +%s)
rm -f "$stamp"
mkdir -p "$build/gocache" "$build/bin"
: >"$dir/build.log"
export GOCACHE="$build/gocache"
export GOBIN="$build/bin"
# versitygw's go.mod has no replace directive, so `go install pkg@version` builds exactly the
# release's module graph.
CGO_ENABLED=0 nice -n 10 go install -trimpath -ldflags "-s -w" "$PKG@$VERSION" >>"$dir/build.log" 2>&1 || {
  say "error: go install $PKG@$VERSION failed after $(($(date +%s) - start))s; the end of $dir/build.log:"
  tail -n 60 "$dir/build.log" >&2
  exit 1
}
tmp="$dir/versitygw.tmp.$$"
trap 'rm -f "$tmp"' EXIT
cp "$GOBIN/versitygw" "$tmp"
"$tmp" --version >/dev/null 2>&1 || "$tmp" --help >/dev/null 2>&1 || die "the new versitygw does not run"
mv -f "$tmp" "$out"
took=$(($(date +%s) - start))
printf '%s\nbuilt_in=%ss, %s, on %s\n' "$inputs" "$took" "$kind" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$stamp.tmp"
mv -f "$stamp.tmp" "$stamp"
say "built $out in ${took}s ($kind)"
printf '%s\n' "$out"
