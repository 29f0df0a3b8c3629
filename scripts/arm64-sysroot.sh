#!/usr/bin/env bash
# Builds an arm64 sysroot for the full cross build (cmake/aarch64-linux-gnu-sysroot.cmake) out of
# Debian's arm64 packages, without installing any of them into the host system:
#   scripts/arm64-sysroot.sh SYSROOT_DIR
# Adds the arm64 architecture to dpkg and fetches its package lists if they are missing (needs
# root then), resolves the dependency closure of the -dev packages below, downloads the .debs
# into a cache (NFUSE_ARM64_DEB_CACHE, default SYSROOT_DIR/../arm64-debs), unpacks each with
# dpkg -x into SYSROOT_DIR and makes its absolute symlinks point inside it. What the cross
# toolchain already ships in /usr/aarch64-linux-gnu (libc, libgcc, libstdc++) is left out.
# Reruns exit at once while SYSROOT_DIR/.complete matches the package list; set
# NFUSE_ARM64_SYSROOT_REFRESH=1 to re-resolve (after an apt-get update, say).
# Needs: dpkg, apt (apt-get, apt-cache), realpath (coreutils).
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 SYSROOT_DIR" >&2; exit 2; }
sysroot=$(realpath -m -- "$1")
[[ "$sysroot" != / ]] || { echo "arm64-sysroot: refusing to use / as the sysroot" >&2; exit 2; }
cache=$(realpath -m -- "${NFUSE_ARM64_DEB_CACHE:-$sysroot/../arm64-debs}")

# The packages the full build needs; their dependency closure comes with them.
roots=(libonnx-dev libprotobuf-dev libcpuinfo-dev libstb-dev
  nlohmann-json3-dev libcli11-dev libgtest-dev libflatbuffers-dev)
# Provided by the cross toolchain (libc6-dev-arm64-cross, libstdc++-12-dev-arm64-cross, ...) or
# not needed for building against the roots: neither taken nor followed.
skip=(libc6 libc6-dev libc-dev libc-dev-bin libgcc-s1 libgcc-12-dev gcc-12-base libstdc++6
  libstdc++-12-dev libstdc++-dev linux-libc-dev libcrypt1 libcrypt-dev)

log() { echo "arm64-sysroot: $*"; }
want="roots: ${roots[*]} | skip: ${skip[*]}"

if [[ -f "$sysroot/.complete" && -z "${NFUSE_ARM64_SYSROOT_REFRESH:-}" ]] &&
   [[ "$(head -n 1 "$sysroot/.complete")" == "$want" ]]; then
  log "$sysroot is complete ($(($(wc -l <"$sysroot/.complete") - 1)) packages); nothing to do"
  exit 0
fi

# --- arm64 package lists -------------------------------------------------------------------
as_root() { if [[ $EUID -eq 0 ]]; then "$@"; else sudo "$@"; fi; }
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  log "dpkg --add-architecture arm64"
  as_root dpkg --add-architecture arm64
fi
if ! apt-cache show --no-all-versions libc6:arm64 >/dev/null 2>&1; then
  log "apt-get update (no arm64 package lists yet)"
  as_root apt-get update
fi

# --- dependency closure --------------------------------------------------------------------
declare -A skipped=() chosen=() version=()
for s in "${skip[@]}"; do skipped[$s]=1; done
is_root() { local r; for r in "${roots[@]}"; do [[ "$r" == "$1" ]] && return 0; done; return 1; }

# "name arch version" of each candidate among the packages named (name or name:arch; an
# Architecture: all package answers to its bare name only, so those are asked again without
# the arch). Purely virtual names give nothing. One apt-cache call per batch: each call parses
# the package lists anew, a second or more.
candidates() {
  # shellcheck disable=SC2016  # an awk program
  local fields='/^Package:/{p=$2} /^Architecture:/{a=$2} /^Version:/{v=$2} /^$/{if (p) print p, a, v; p=""} END{if (p) print p, a, v}'
  local found again=() n
  found=$(apt-cache show --no-all-versions "$@" 2>/dev/null | awk "$fields" || true)
  for n in "$@"; do grep -q "^${n%%:*} " <<<"$found" || again+=("${n%%:*}"); done
  [[ -z "$found" ]] || echo "$found"
  if [[ ${#again[@]} -gt 0 ]]; then apt-cache show --no-all-versions "${again[@]}" 2>/dev/null | awk "$fields" || true; fi
}
# How apt names the package $1 of architecture $2.
spec_of() { if [[ "$2" == all ]]; then echo "$1"; else echo "$1:$2"; fi; }

# Breadth first, one level of the dependency graph per round.
frontier=()
for r in "${roots[@]}"; do frontier+=("$r:arm64"); done
while [[ ${#frontier[@]} -gt 0 ]]; do
  declare -A asked=()
  ask=()
  for spec in "${frontier[@]}"; do
    name=${spec%%:*}
    [[ -n "${chosen[$name]:-}" || -n "${skipped[$name]:-}" || -n "${asked[$name]:-}" ]] && continue
    asked[$name]=1; ask+=("$spec")
  done
  unset asked
  frontier=()
  [[ ${#ask[@]} -gt 0 ]] || break
  level=()
  while read -r pkg arch ver; do
    [[ -n "$pkg" && -z "${chosen[$pkg]:-}" && -z "${skipped[$pkg]:-}" ]] || continue
    if [[ "$arch" == all ]] && ! is_root "$pkg"; then
      log "skip $pkg (Architecture: all, not needed to build)"; skipped[$pkg]=1; continue
    fi
    if [[ "$arch" != all && "$arch" != arm64 ]]; then
      log "skip $pkg ($arch: a host tool satisfying a Multi-Arch: foreign dependency)"
      skipped[$pkg]=1; continue
    fi
    chosen[$pkg]=$arch; version[$pkg]=$ver; level+=("$(spec_of "$pkg" "$arch")")
  done < <(candidates "${ask[@]}")
  for spec in "${ask[@]}"; do
    name=${spec%%:*}
    if [[ -z "${chosen[$name]:-}" && -z "${skipped[$name]:-}" ]]; then
      log "ERROR: no arm64 package $spec" >&2; exit 1
    fi
  done
  [[ ${#level[@]} -gt 0 ]] || break
  # Depends / PreDepends of this level, one line per group of alternatives ("|"); a virtual
  # package is given as VIRTUAL:name followed by its providers. A group is satisfied by a
  # skipped or chosen name, else it takes its first real package.
  while read -r -a alts; do
    pick=""
    for alt in "${alts[@]}"; do
      base=${alt#VIRTUAL:}; base=${base%%:*}
      if [[ -n "${skipped[$base]:-}" || -n "${chosen[$base]:-}" ]]; then pick=SATISFIED; break; fi
      if [[ -z "$pick" && "$alt" != VIRTUAL:* ]]; then pick=$alt; fi
    done
    if [[ -n "$pick" && "$pick" != SATISFIED ]]; then frontier+=("$pick"); fi
  done < <(apt-cache depends --important "${level[@]}" | awk '
    /^[^ ]/ { if (cur != "") print cur; cur = ""; closing = 0; next }   # the next package
    /^    [^ ]/ { cur = cur " " $1; next }
    /^ [ |](Depends|PreDepends):/ {
      if (closing) { print cur; cur = "" }
      dep = $2; if (dep ~ /^</) { gsub(/[<>]/, "", dep); dep = "VIRTUAL:" dep }
      cur = (cur == "" ? dep : cur " " dep)
      closing = (substr($0, 2, 1) != "|")
    }
    END { if (cur != "") print cur }')
done

mapfile -t names < <(printf '%s\n' "${!chosen[@]}" | sort)
log "${#names[@]} packages: ${names[*]}"

# --- download ------------------------------------------------------------------------------
mkdir -p "$cache"
debs=() missing=()
for n in "${names[@]}"; do
  a=${chosen[$n]}; v=${version[$n]}
  deb="$cache/${n}_${v//:/%3a}_${a}.deb"
  debs+=("$deb")
  [[ -s "$deb" ]] || missing+=("$(spec_of "$n" "$a")=$v")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  log "apt-get download into $cache: ${missing[*]}"
  # As root apt would hand the download to its _apt user, who cannot write the cache dir.
  sandbox=(); [[ $EUID -ne 0 ]] || sandbox=(-o APT::Sandbox::User=root)
  (cd "$cache" && apt-get download -q "${sandbox[@]}" "${missing[@]}")
else
  log "all ${#names[@]} .debs already in $cache"
fi
for deb in "${debs[@]}"; do
  [[ -s "$deb" ]] || { log "ERROR: $deb missing after apt-get download" >&2; exit 1; }
done

# --- unpack into a fresh tree, then swap it in -----------------------------------------------
if [[ -e "$sysroot" && ! -f "$sysroot/.nfuse-arm64-sysroot" ]] && [[ -n "$(ls -A "$sysroot")" ]]; then
  log "ERROR: $sysroot exists, is not empty and was not made by this script" >&2; exit 1
fi
tmp="$sysroot.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
for deb in "${debs[@]}"; do
  log "dpkg -x $(basename "$deb")"
  dpkg -x "$deb" "$tmp"
done

# Absolute symlinks (usr/lib/aarch64-linux-gnu/libz.so -> /lib/aarch64-linux-gnu/libz.so.1.2.13)
# would leave the sysroot: make them relative, pointing at the same path inside it.
fixed=0
while IFS= read -r -d '' link; do
  target=$(readlink "$link")
  [[ "$target" == /* ]] || continue
  ln -sfn "$(realpath -m -s --relative-to="$(dirname "$link")" "$tmp$target")" "$link"
  fixed=$((fixed + 1))
done < <(find "$tmp" -type l -print0)
log "made $fixed absolute symlinks relative"
dangling=$(find "$tmp" -xtype l -printf '  %P -> %l\n')
[[ -z "$dangling" ]] || log "warning: dangling symlinks (their targets are in skipped packages):"$'\n'"$dangling"

touch "$tmp/.nfuse-arm64-sysroot"
{ echo "$want"; for n in "${names[@]}"; do echo "$n:${chosen[$n]} ${version[$n]}"; done; } >"$tmp/.complete"
rm -rf "$sysroot"
mv "$tmp" "$sysroot"
trap - EXIT
log "done: $sysroot (debs cached in $cache)"
