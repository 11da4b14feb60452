#!/bin/sh
# install.sh — install mailfs's six binaries from a release, checked.
#
#   install.sh --base URL [--version V] [--prefix DIR]
#       fetches URL/checksums.txt and URL/mailfs_V_OS_ARCH.tar.gz
#       (V: the one checksums.txt lists for this machine, when not given)
#   install.sh --archive FILE [--checksums FILE] [--prefix DIR]
#       a release archive already here; its checksums.txt is the one beside
#       it unless --checksums names another
#
# The archive's SHA-256 must match its line in checksums.txt, or nothing is
# installed. The binaries (mailfs, mailfs-hook, mailfs-mcp, mailfs-serve, mailfs-codex,
# mailfs-gascity) go into --prefix (default ~/.local/bin), each put in place
# by a rename, so a running mailfs is never half-replaced and running the
# script again is safe. Exit status 0 installed, 1 refused (a checksum that
# does not match, an archive for another machine), 2 trouble (a download, a
# missing file), 80 usage.
set -eu

usage() {
	sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 80
}
die() {
	echo "install.sh: error: $2" >&2
	exit "$1"
}

base= version= archive= checksums= prefix="${HOME:?}/.local/bin"
while [ $# -gt 0 ]; do
	case $1 in
	--base) [ $# -ge 2 ] || usage; base=$2; shift 2 ;;
	--version) [ $# -ge 2 ] || usage; version=$2; shift 2 ;;
	--archive) [ $# -ge 2 ] || usage; archive=$2; shift 2 ;;
	--checksums) [ $# -ge 2 ] || usage; checksums=$2; shift 2 ;;
	--prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
	-h | --help) usage ;;
	*) echo "install.sh: unknown argument: $1" >&2; usage ;;
	esac
done
if { [ -n "$base" ] && [ -n "$archive" ]; } || { [ -z "$base" ] && [ -z "$archive" ]; }; then
	echo "install.sh: give --base URL or --archive FILE, one of them" >&2
	usage
fi

os=$(uname -s | tr '[:upper:]' '[:lower:]')
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die 1 "no release for this machine's architecture, $(uname -m) (linux and darwin on amd64 and arm64; or go install ./cmd/... from a clone)" ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/mailfs-install.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

fetch() { # URL FILE
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL -o "$2" "$1" || die 2 "cannot fetch $1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1" || die 2 "cannot fetch $1"
	else
		die 2 "neither curl nor wget is here to fetch $1"
	fi
}
sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	else
		shasum -a 256 "$1" | cut -d' ' -f1
	fi
}

if [ -n "$base" ]; then
	base=${base%/}
	fetch "$base/checksums.txt" "$work/checksums.txt"
	checksums=$work/checksums.txt
	if [ -z "$version" ]; then
		version=$(sed -n "s/^[0-9a-f]* *mailfs_\(.*\)_${os}_${arch}\.tar\.gz$/\1/p" "$checksums" | head -n 1)
		[ -n "$version" ] || die 1 "$base/checksums.txt lists no archive for ${os}_${arch}"
	fi
	name=mailfs_${version}_${os}_${arch}.tar.gz
	fetch "$base/$name" "$work/$name"
	archive=$work/$name
else
	[ -f "$archive" ] || die 2 "no archive at $archive"
	[ -n "$checksums" ] || checksums=$(dirname "$archive")/checksums.txt
	[ -f "$checksums" ] || die 2 "no checksums file at $checksums (give --checksums FILE)"
	name=$(basename "$archive")
fi
case $name in
*_${os}_${arch}.tar.gz) ;;
*) die 1 "$name is not an archive for this machine (${os}_${arch})" ;;
esac

want=$(awk -v n="$name" '$2 == n || $2 == "*" n { print $1; exit }' "$checksums")
[ -n "$want" ] || die 1 "$checksums has no line for $name"
got=$(sha256 "$archive")
[ "$got" = "$want" ] || die 1 "$name's SHA-256 is $got, and $checksums says $want: not installed"

mkdir -p "$work/x"
tar -xzf "$archive" -C "$work/x"
mkdir -p "$prefix"
for bin in mailfs mailfs-hook mailfs-mcp mailfs-serve mailfs-codex mailfs-gascity; do
	[ -f "$work/x/$bin" ] || die 2 "$name holds no $bin"
done
for bin in mailfs mailfs-hook mailfs-mcp mailfs-serve mailfs-codex mailfs-gascity; do
	cp "$work/x/$bin" "$prefix/.$bin.installing"
	chmod 0755 "$prefix/.$bin.installing"
	mv -f "$prefix/.$bin.installing" "$prefix/$bin"
done
echo "installed $("$prefix/mailfs" version) into $prefix"
case ":$PATH:" in
*":$prefix:"*) ;;
*) echo "note: $prefix is not on \$PATH; add it (export PATH=\"$prefix:\$PATH\")" ;;
esac
