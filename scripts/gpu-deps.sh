#!/usr/bin/env bash
# Prepares what the GPU machine (which reaches no package registry) needs
# beyond its image, in git-ignored folders that travel with a device call:
#   .deps/root  Debian's header-only and small libraries colo builds against
#   .data/fashion-mnist  the real data set
# Run here, before a device call that names .deps and .data in `carry`.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libtomlplusplus-dev libtomlplusplus3
          nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev googletest zlib1g-dev
          libsqlite3-dev libsqlite3-0 libcpp-httplib-dev libcpp-httplib0.11 libbrotli1 libgloo-dev
          libzmq3-dev libzmq5 cppzmq-dev libsodium23 libnorm1 libpgm-5.3-0)
# libjpeg is not carried: the GPU image has its own (headers and library of
# another version; mixing the two fails at run time).
mkdir -p .deps/debs .deps/root
(cd .deps/debs && apt-get download "${packages[@]}" >/dev/null)
for deb in .deps/debs/*.deb; do dpkg-deb -x "$deb" .deps/root; done
rm -rf .deps/root/usr/share/doc .deps/root/usr/src .deps/debs
# zlib: link the GPU machine's own shared libz (any version has the soname
# libz.so.1); the static libz.a is not position-independent, so it cannot go
# into the Python module colo._core.
rm -f .deps/root/usr/lib/x86_64-linux-gnu/libz.a
ln -sf /lib/x86_64-linux-gnu/libz.so.1 .deps/root/usr/lib/x86_64-linux-gnu/libz.so

mkdir -p .data
rm -rf .data/fashion-mnist
cp -r /usr/share/datasets/fashion-mnist .data/fashion-mnist
du -sh .deps .data
