#!/usr/bin/env bash
# Bring the console's front-end libraries into src/hazmat/server/console/static/ from the npm
# registry, each at the version and integrity pinned here (checked before anything is copied),
# and write their manifest (VENDORED.json: version, license, SHA-256 of each file, which
# tests/server/test_console_vendored.py checks). Run it only to move to a new version: the files
# are committed (with each package's LICENSE), so that the console works with no network and no npm on the service's host.
set -euo pipefail
cd "$(dirname "$0")/.."
STATIC=src/hazmat/server/console/static
# name version integrity license files...
PACKAGES=(
    "htmx.org 2.0.11 sha512-Thx/WtpeOQqSrqBCw/A1cwGJGg4UrVa3+sW0GmrM3p4gJgO89ecH4qtbnyzDDWFvBTqjnIMCgELTNt636dtamA== 0BSD dist/htmx.min.js"
    "uplot 1.6.32 sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw== MIT dist/uPlot.iife.min.js dist/uPlot.min.css"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
manifest="{"
for line in "${PACKAGES[@]}"; do
    read -r name version integrity license files <<<"$line"
    (cd "$work" && npm pack --silent "$name@$version" >/dev/null)
    tarball=$(ls "$work"/*.tgz)
    got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
    [ "$got" = "$integrity" ] || { echo "vendor: $name@$version: integrity $got, not $integrity" >&2; exit 1; }
    mkdir -p "$work/$name" && tar -xzf "$tarball" -C "$work/$name" && rm "$tarball"
    cp "$work/$name/package/LICENSE" "$STATIC/LICENSE.$name"  # shipped with the files
    for file in $files; do
        cp "$work/$name/package/$file" "$STATIC/"
        base=$(basename "$file")
        manifest+="\"$base\": {\"package\": \"$name\", \"version\": \"$version\", \"license\": \"$license\", \"sha256\": \"$(sha256sum "$STATIC/$base" | cut -d' ' -f1)\"}, "
    done
done
printf '%s\n' "${manifest%, }}" | python3 -m json.tool > "$STATIC/VENDORED.json"
echo "vendor: $STATIC/VENDORED.json"
