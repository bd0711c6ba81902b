#!/usr/bin/env bash
# Builds the krew release archive of kubectl-promotion for one platform (the
# host by default) and renders the krew manifest from the krew-release-bot
# template krew/promotion.yaml. See krew/README.md.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: krew/package.sh [options]

Packages kubectl-promotion for krew: writes
  OUT/kubectl-promotion_<version>_<os>_<arch>.tar.gz   (binary, LICENSE, README.md)
  OUT/kubectl-promotion_<version>_<os>_<arch>.tar.gz.sha256
  OUT/promotion.yaml   (the krew manifest, one platform per archive in OUT)

Options:
  --version TAG      release tag, semver with a leading v (default: v<workspace version>)
  --binary PATH      package this pre-built kubectl-promotion instead of running
                     `cargo build --release --locked -p kubectl-promotion`
  --os OS            krew os of the archive: linux, darwin or windows (default: host)
  --arch ARCH        krew arch of the archive: amd64 or arm64 (default: host)
  --base-url URL     where users will download the archives from; the manifest's
                     uri is URL/<archive name> (default: the GitHub release URL
                     in the template)
  --out DIR          output directory (default: dist)
  --template FILE    krew-release-bot template (default: krew/promotion.yaml)
  --license FILE     license to ship (default: LICENSE at the repository root)
  --readme FILE      readme to ship (default: README.md at the repository root)
  --require-all      fail unless OUT holds an archive for every platform of the template
  -h, --help         show this help

Archives for other platforms already in OUT (from other build jobs) are kept
and listed in the manifest; platforms without an archive are left out.
EOF
}

die() { echo "package.sh: $*" >&2; exit 1; }

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="" binary="" os="" arch="" base_url="" out="dist"
template="$repo_root/krew/promotion.yaml"
license="$repo_root/LICENSE"
readme="$repo_root/README.md"
require_all=0

while [ $# -gt 0 ]; do
  case "$1" in
    --version) version="${2:?--version needs a value}"; shift 2 ;;
    --binary) binary="${2:?--binary needs a value}"; shift 2 ;;
    --os) os="${2:?--os needs a value}"; shift 2 ;;
    --arch) arch="${2:?--arch needs a value}"; shift 2 ;;
    --base-url) base_url="${2:?--base-url needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    --template) template="${2:?--template needs a value}"; shift 2 ;;
    --license) license="${2:?--license needs a value}"; shift 2 ;;
    --readme) readme="${2:?--readme needs a value}"; shift 2 ;;
    --require-all) require_all=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

if [ -z "$version" ]; then
  workspace_version="$(awk '
    /^\[/ { in_section = ($0 == "[workspace.package]") }
    in_section && /^version *=/ { gsub(/^version *= *"|".*$/, ""); print; exit }
  ' "$repo_root/Cargo.toml")"
  [ -n "$workspace_version" ] || die "no version in [workspace.package] of $repo_root/Cargo.toml; pass --version"
  version="v$workspace_version"
fi
# krew parses spec.version as semver and requires the leading v.
echo "$version" | grep -Eq '^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$' \
  || die "--version $version is not a semantic version with a leading v (e.g. v0.1.0)"

if [ -z "$os" ]; then
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    MINGW*|MSYS*|CYGWIN*) os=windows ;;
    *) die "unsupported host OS $(uname -s); pass --os" ;;
  esac
fi
if [ -z "$arch" ]; then
  case "$(uname -m)" in
    x86_64|amd64) arch=amd64 ;;
    aarch64|arm64) arch=arm64 ;;
    *) die "unsupported host architecture $(uname -m); pass --arch" ;;
  esac
fi
case "$os/$arch" in
  linux/amd64|linux/arm64|darwin/amd64|darwin/arm64|windows/amd64) ;;
  *) die "$os/$arch is not a platform of the krew manifest" ;;
esac

bin_name=kubectl-promotion
[ "$os" = windows ] && bin_name=kubectl-promotion.exe

[ -f "$template" ] || die "template not found: $template"
[ -f "$license" ] || die "license not found: $license (krew requires a LICENSE in the archive)"
[ -f "$readme" ] || die "readme not found: $readme"

if [ -z "$binary" ]; then
  echo "package.sh: cargo build --release --locked -p kubectl-promotion" >&2
  # The JSON messages name the executable wherever the target dir is.
  binary="$(cd "$repo_root" && cargo build --release --locked -p kubectl-promotion --bin kubectl-promotion \
      --message-format=json-render-diagnostics \
    | sed -n 's/.*"executable":"\([^"]*kubectl-promotion[^"]*\)".*/\1/p' | tail -n 1)"
  [ -n "$binary" ] || die "cargo build did not report a kubectl-promotion executable"
fi
[ -f "$binary" ] && [ -x "$binary" ] || die "binary not found or not executable: $binary"

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | awk '{print $1}'
  else
    shasum -a 256 "$1" | awk '{print $1}'
  fi | tr 'A-F' 'a-f'
}

mkdir -p "$out"
out="$(cd "$out" && pwd)"
asset="kubectl-promotion_${version}_${os}_${arch}.tar.gz"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

cp "$binary" "$stage/$bin_name"
chmod 0755 "$stage/$bin_name"
cp "$license" "$stage/LICENSE"
cp "$readme" "$stage/README.md"
chmod 0644 "$stage/LICENSE" "$stage/README.md"

tar_flags=()
if tar --version 2>/dev/null | grep -q 'GNU tar'; then
  tar_flags=(--owner=0 --group=0 --numeric-owner)
  [ -n "${SOURCE_DATE_EPOCH:-}" ] && tar_flags+=(--mtime="@$SOURCE_DATE_EPOCH")
fi
# gzip -n leaves the timestamp out of the gzip header.
tar ${tar_flags[@]+"${tar_flags[@]}"} -C "$stage" -cf - "$bin_name" LICENSE README.md | gzip -n > "$out/$asset"
sha="$(sha256_of "$out/$asset")"
printf '%s  %s\n' "$sha" "$asset" > "$out/$asset.sha256"

# asset name -> sha256 for every archive of this version in OUT.
shas="$stage/shas"
: > "$shas"
for archive in "$out"/kubectl-promotion_"${version}"_*.tar.gz; do
  [ -f "$archive" ] || continue
  printf '%s %s\n' "$(sha256_of "$archive")" "$(basename "$archive")" >> "$shas"
done

# Renders the template the way krew-release-bot does: {{ .TagName }} is the
# tag, {{ .Version }} the tag without its v, and each
# {{addURIAndSha "<url>" .TagName }} line becomes `uri:` and `sha256:` lines.
# A platform whose archive is not in OUT is left out.
manifest="$out/promotion.yaml"
awk -v tag="$version" -v ver="${version#v}" -v base="${base_url%/}" \
    -v shafile="$shas" -v require_all="$require_all" '
  BEGIN {
    while ((getline entry < shafile) > 0) { split(entry, f, " "); sha[f[2]] = f[1] }
    kept = 0
  }
  function subst(s) {
    gsub(/[{][{] *[.]TagName *[}][}]/, tag, s)
    gsub(/[{][{] *[.]Version *[}][}]/, ver, s)
    return s
  }
  function flush(   i) {
    if (n > 0 && keep) { for (i = 1; i <= n; i++) print block[i]; kept++ }
    n = 0
  }
  {
    line = $0
    if (in_platforms && line !~ /^  - / && line !~ /^   / && line !~ /^[ \t]*$/) { flush(); in_platforms = 0 }
    if (in_platforms && line ~ /^  - /) { flush(); keep = 1 }
    if (line ~ /[{][{] *addURIAndSha /) {
      url = line; sub(/^[^"]*"/, "", url); sub(/".*$/, "", url); url = subst(url)
      name = url; sub(/.*\//, "", name)
      if (base != "") url = base "/" name
      indent = line; sub(/[^ ].*$/, "", indent)
      if (name in sha) {
        line = indent "uri: " url "\n" indent "sha256: " sha[name]
      } else {
        keep = 0
        print "package.sh: no archive " name " in the output directory; leaving that platform out" > "/dev/stderr"
        missing++
      }
    } else {
      line = subst(line)
    }
    if (in_platforms) block[++n] = line; else print line
    if (line ~ /^  platforms:/) { in_platforms = 1; n = 0 }
  }
  END {
    flush()
    if (missing > 0 && require_all == 1) { print "package.sh: --require-all: " missing " platform archive(s) missing" > "/dev/stderr"; exit 2 }
    if (kept == 0) { print "package.sh: no platform has an archive; the manifest would be empty" > "/dev/stderr"; exit 2 }
  }
' "$template" > "$manifest.tmp" || { rm -f "$manifest.tmp"; die "rendering $template failed"; }
mv "$manifest.tmp" "$manifest"

echo "$out/$asset"
echo "$sha"
echo "$manifest"
