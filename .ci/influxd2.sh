#!/usr/bin/env bash
# Builds a real InfluxDB v2 server (`influxd` 2.7.12) from the Go module proxy, for the tests
# that need one (`TSBSCTL_TEST_INFLUXD`). InfluxData's release archives are not reachable from
# every CI machine, the module proxy is; building from source needs Go, Rust (cargo) and a C
# compiler, all of which the tests need anyway.
#
# The result is cached OUTSIDE the clone, in
#   ${TSBSCTL_CI_CACHE:-$HOME/.cache/tsbsctl-ci}/influxd-2.7.12/influxd
# with a stamp of every input (module versions, Go, rustc, cargo, tags, ldflags, recipe); a rerun
# whose stamp matches takes seconds, any change rebuilds. The binary is linked under a temporary
# name and renamed into place, and the stamp is written last, so a half build is never taken for
# a finished one. Progress goes to stderr; the last line on stdout is the binary's path.
# Exit status is non-zero, with the end of the build log on stderr, when the build fails.
set -euo pipefail

INFLUXDB_MODULE=github.com/influxdata/influxdb/v2
INFLUXDB_VERSION=v2.7.12
FLUX_MODULE=github.com/influxdata/flux
FLUX_VERSION=v0.196.1 # what v2.7.12's go.mod requires; checked below
PKG_CONFIG_MODULE=github.com/influxdata/pkg-config
PKG_CONFIG_VERSION=v0.2.14 # what v2.7.12's go.mod requires; checked below
# The release's commit and tag date: the proxy's .info carries only the date
# (2025-05-20T22:58:10Z); the short commit is that of the v2.7.12 tag in influxdata/influxdb.
RELEASE_COMMIT=ec9dcde5d6
# Build tags of the release's linux build (scripts/ci/build.sh) minus `assets` (the web UI,
# which is downloaded separately and not needed) and `static_build` (a musl cross toolchain).
GO_TAGS=sqlite_foreign_keys,sqlite_json,noasm
# Bump when the recipe below changes in a way the other inputs do not show.
RECIPE=1

cache_root=${TSBSCTL_CI_CACHE:-$HOME/.cache/tsbsctl-ci}
dir="$cache_root/influxd-${INFLUXDB_VERSION#v}"
out="$dir/influxd"
stamp="$dir/influxd.stamp"

say() { printf 'influxd2.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

for tool in go cargo rustc cc flock; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not on PATH; building influxd needs Go, Rust (cargo, rustc), a C compiler and flock"
done

mkdir -p "$dir"
# Two CI runs on one machine share the cache: one builds, the other waits for it.
exec 9>"$dir/.lock"
flock 9

# The module proxy's view of the release; the tag date is the build date, so the ldflags (and
# the stamp) do not change from run to run.
info=$(go mod download -json "$INFLUXDB_MODULE@$INFLUXDB_VERSION") || die "go mod download $INFLUXDB_MODULE@$INFLUXDB_VERSION failed"
field() { printf '%s\n' "$info" | sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p" | head -n1; }
mod_dir=$(field Dir)
mod_sum=$(field Sum)
info_file=$(field Info)
[ -n "$mod_dir" ] && [ -d "$mod_dir" ] || die "no module directory in: $info"
release_date=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$info_file")
[ -n "$release_date" ] || die "no Time in $info_file"

# Fail early if the pins above are not what the release requires.
grep -Eq "^[[:space:]]*$FLUX_MODULE $FLUX_VERSION\$" "$mod_dir/go.mod" || die "$INFLUXDB_VERSION's go.mod does not require $FLUX_MODULE $FLUX_VERSION"
grep -Eq "^[[:space:]]*$PKG_CONFIG_MODULE $PKG_CONFIG_VERSION\$" "$mod_dir/go.mod" || die "$INFLUXDB_VERSION's go.mod does not require $PKG_CONFIG_MODULE $PKG_CONFIG_VERSION"

# libflux pins Rust 1.72 (rust-toolchain.toml); use an installed toolchain instead.
export RUSTUP_TOOLCHAIN=${TSBSCTL_CI_RUST_TOOLCHAIN:-stable}

ldflags="-s -w -X main.version=$INFLUXDB_VERSION -X main.commit=$RELEASE_COMMIT -X main.date=$release_date"
want_version="InfluxDB $INFLUXDB_VERSION (git: $RELEASE_COMMIT) build_date: $release_date"
inputs=$(cat <<EOF
recipe=$RECIPE
module=$INFLUXDB_MODULE@$INFLUXDB_VERSION $mod_sum
flux=$FLUX_MODULE@$FLUX_VERSION
pkg-config=$PKG_CONFIG_MODULE@$PKG_CONFIG_VERSION
go=$(go version)
goflags=${GOFLAGS:-}
rustc=$(rustc --version)
cargo=$(cargo --version)
cc=$(cc --version | head -n1)
tags=$GO_TAGS
ldflags=$ldflags
EOF
)

if [ -x "$out" ] && [ -f "$stamp" ] && [ "$(sed '/^built_in=/d' "$stamp")" = "$inputs" ] \
  && [ "$("$out" version 2>/dev/null)" = "$want_version" ]; then
  say "cached: $out ($(sed -n 's/^built_in=//p' "$stamp"))"
  printf '%s\n' "$out"
  exit 0
fi

say "building influxd $INFLUXDB_VERSION into $dir (cold: tens of minutes; log: $dir/build.log)"
start=$(date +%s)
rm -f "$stamp"
build="$dir/build"
src="$build/src-$INFLUXDB_VERSION"
# Cold = nothing of an earlier build to reuse; a rebuild after an input change reuses the Go
# build cache and libflux and takes well under a minute.
kind="cold build"
[ -d "$build/gocache" ] && kind="rebuild over the previous build's caches"
mkdir -p "$build"
: >"$dir/build.log"

fail() {
  say "error: $1 after $(($(date +%s) - start))s; the end of $dir/build.log:"
  tail -n 60 "$dir/build.log" >&2
  exit 1
}

# The whole build sits in the cache dir: its own Go build cache (where the pkg-config wrapper
# also copies and builds libflux), its own GOBIN. The module and crate downloads use the
# user's ordinary caches.
export GOCACHE="$build/gocache"
export GOBIN="$build/bin"
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false"
mkdir -p "$GOCACHE" "$GOBIN"

# A private copy of a directory, made under a temporary name and renamed when complete.
copy_tree() {
  rm -rf "$2.tmp"
  cp -R "$1" "$2.tmp"
  chmod -R u+w "$2.tmp"
  mv "$2.tmp" "$2"
}

# The module's go.mod has a `replace`, so `go install pkg@version` refuses it: build in a copy.
[ -f "$src/.complete" ] || {
  rm -rf "$src"
  copy_tree "$mod_dir" "$src"
  touch "$src/.complete"
}

# InfluxData's pkg-config wrapper builds libflux with cargo when cgo asks for `flux`.
if ! [ -x "$GOBIN/pkg-config" ]; then
  say "installing $PKG_CONFIG_MODULE@$PKG_CONFIG_VERSION into $GOBIN"
  nice -n 10 go install "$PKG_CONFIG_MODULE@$PKG_CONFIG_VERSION" >>"$dir/build.log" 2>&1 || fail "go install $PKG_CONFIG_MODULE@$PKG_CONFIG_VERSION failed"
fi

# The wrapper copies the read-only flux module into $GOCACHE/pkgconfig/<module>@<version> and
# reuses that directory whenever it exists, even after an interrupted copy; make the copy here,
# atomically, so an interrupted run cannot leave a half tree behind.
flux_dir=$(go mod download -json "$FLUX_MODULE@$FLUX_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$flux_dir" ] || fail "go mod download $FLUX_MODULE@$FLUX_VERSION failed"
flux_copy="$GOCACHE/pkgconfig/$FLUX_MODULE@$FLUX_VERSION"
[ -d "$flux_copy" ] || { mkdir -p "$(dirname "$flux_copy")"; copy_tree "$flux_dir" "$flux_copy"; }

# libflux's default `strict` feature turns warnings into errors, and today's compiler warns
# about things 1.72 did not; cap lints for every crate, build scripts included (RUSTFLAGS does
# not reach those).
cat >"$build/rustc-cap-lints" <<'EOF'
#!/bin/sh
exec "$@" --cap-lints warn
EOF
chmod +x "$build/rustc-cap-lints"
export RUSTC_WRAPPER="$build/rustc-cap-lints"
export PKG_CONFIG="$GOBIN/pkg-config"
export CGO_ENABLED=1

tmp="$dir/influxd.tmp.$$"
trap 'rm -f "$tmp"' EXIT
say "go build ./cmd/influxd (libflux with cargo, then the Go packages)"
(cd "$src" && nice -n 10 go build -tags "$GO_TAGS" -ldflags "$ldflags" -o "$tmp" ./cmd/influxd) >>"$dir/build.log" 2>&1 || fail "go build ./cmd/influxd failed"
got=$("$tmp" version 2>&1) || fail "the new influxd does not run: $got"
[ "$got" = "$want_version" ] || fail "the new influxd says '$got', expected '$want_version'"
mv -f "$tmp" "$out"
took=$(($(date +%s) - start))
printf '%s\nbuilt_in=%ss, %s, on %s\n' "$inputs" "$took" "$kind" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$stamp.tmp"
mv -f "$stamp.tmp" "$stamp"
say "built $out in ${took}s ($kind)"
printf '%s\n' "$out"
