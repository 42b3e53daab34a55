#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The Debian package as a user gets it: validates the desktop entry and AppStream metainfo, builds the
# package with CPack in BUILD_DIR, unpacks it into a scratch root (dpkg -x) and runs the installed programs
# from there: --version, and headroom-cli estimate of an example that ships with it. lintian must find
# nothing: the copyright file, changelog and manual pages are where Debian policy puts them.
set -euo pipefail
src=$1 build=$2
desktop-file-validate "$src/packaging/headroom.desktop"
appstreamcli validate --no-net --pedantic "$src/packaging/io.github.headroom.Headroom.metainfo.xml"
rm -f "$build"/headroom_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/headroom_*.deb)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg -x "$deb" "$root"
for f in usr/bin/headroom usr/bin/headroom-cli usr/share/applications/headroom.desktop \
  usr/share/metainfo/io.github.headroom.Headroom.metainfo.xml usr/share/mime/packages/headroom.xml \
  usr/share/icons/hicolor/scalable/apps/headroom.svg; do
  [[ -f $root/$f ]] || { echo "missing in the package: $f"; exit 1; }
done
for f in usr/share/doc/headroom/copyright usr/share/doc/headroom/changelog.gz \
  usr/share/man/man1/headroom.1.gz usr/share/man/man1/headroom-cli.1.gz; do
  [[ -f $root/$f ]] || { echo "missing in the package: $f"; exit 1; }
done
grep -q "^License: GPL-3+" "$root/usr/share/doc/headroom/copyright"
findings=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -E '^[EW]: ' || true)
[[ -z $findings ]] || { echo "lintian:"; echo "$findings"; exit 1; }
for size in 16 24 32 48 64 128 256 512; do
  icon=$root/usr/share/icons/hicolor/${size}x${size}/apps/headroom.png
  [[ -f $icon ]] || { echo "missing icon ${size}x${size}"; exit 1; }
  file "$icon" | grep -q "PNG image data, $size x $size" || { echo "bad icon: $(file "$icon")"; exit 1; }
done
dpkg-deb -f "$deb" Depends | grep -q libqt6 || { echo "the package does not depend on Qt"; exit 1; }
"$root/usr/bin/headroom-cli" --version | grep -q "^headroom-cli [0-9]"
QT_QPA_PLATFORM=offscreen "$root/usr/bin/headroom" --version | grep -q "^Headroom [0-9]"
example=$root/usr/share/headroom/examples/llama3-70b-3d.headroom.json
"$root/usr/bin/headroom-cli" estimate "$example" --json | grep -q '"schema": "headroom.estimate/1"'
echo "package: $(basename "$deb") installs and runs ($(dpkg-deb -f "$deb" Installed-Size) KiB)"
