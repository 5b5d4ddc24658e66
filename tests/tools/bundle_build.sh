#!/usr/bin/env bash
# bundle_build.sh WORK: the gpu flavour from a tools/deps bundle alone. Makes the bundle in WORK/deps
# (once: kept while WORK/deps/MANIFEST is there), then, in a private mount namespace where /dev/null
# is bound over every file of the system's copies of the bundled packages and over apt-get and
# dpkg-query, builds grpo and test_env into WORK/gpu with GRPO_DEPS and runs both. A configure,
# compile, link or load that reaches a system copy reads an empty file and fails, and so does any
# attempt to install packages. Exit 77 (skipped) where the bundle cannot be made or hidden here.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -eq 1 ] || { echo "usage: tests/tools/bundle_build.sh WORK" >&2; exit 2; }
work=$(mkdir -p "$1" && cd "$1" && pwd)
skip() { echo "SKIP: $*"; exit 77; }

if [ "${GRPO_BUNDLE_HIDDEN:-}" != 1 ]; then
  command -v apt-get >/dev/null && command -v dpkg-query >/dev/null || skip "no apt-get (not a Debian-like system)"
  command -v unshare >/dev/null || skip "no unshare"
  PATH="$PATH:/usr/local/cuda/bin" command -v nvcc >/dev/null || skip "no CUDA toolkit (nvcc)"
  if [ ! -f "$work/deps/MANIFEST" ]; then
    if ! "$root/tools/deps" --bundle "$work/deps" 2>"$work/bundle.log"; then
      cat "$work/bundle.log" >&2
      grep -qiE "resolv|connect|fetch|unreachable|timed out" "$work/bundle.log" && skip "no network for apt-get download"
      grep -qiE "permission denied|are you root|sudo" "$work/bundle.log" && skip "apt lists need updating and this is not root"
      exit 1
    fi
  fi
  if unshare -m true 2>/dev/null; then ns=(unshare -m)
  elif unshare -rm true 2>/dev/null; then ns=(unshare -rm)
  else skip "cannot make a mount namespace (needs root or user namespaces)"; fi
  GRPO_BUNDLE_HIDDEN=1 exec "${ns[@]}" "$0" "$work"
fi

# In the private namespace: hide every installed file of the bundled packages (symlinks resolve
# to hidden files, and Debian's alternatives links for OpenBLAS point into the hidden folders).
hidden=0
while read -r pkg _; do
  case "$pkg" in ''|'#'*) continue ;; esac
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || continue
  while read -r f; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    mount --bind /dev/null "$f"
    hidden=$((hidden + 1))
  done < <(dpkg-query -L "$pkg")
done <"$work/deps/MANIFEST"
for tool in apt-get dpkg-query; do mount --bind /dev/null "$(command -v "$tool")"; done
echo "hid $hidden files of the system's copies of the bundled packages, and apt-get and dpkg-query"

# Found packages are cached: configure afresh so that every find runs with the copies hidden.
rm -f "$work/gpu/CMakeCache.txt"
GRPO_DEPS="$work/deps" GRPO_BUILD_DIR="$work/gpu" GRPO_TARGETS="grpo test_env" "$root/tools/build" gpu
"$work/gpu/grpo" info
"$work/gpu/test_env" --gtest_brief=1
