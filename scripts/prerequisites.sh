#!/usr/bin/env bash
# Checks the system prerequisites (python >= 3.11, node >= 18, bubblewrap, libseccomp, util-linux's prlimit and setpriv; with --browser also Chromium and its
# driver for the browser tests); installs missing ones with apt-get when running as root on Debian, otherwise says
# in one line what to install.
set -euo pipefail

need_apt=()
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null || need_apt+=(python3 python3-venv)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if ! command -v node >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 18 ]; then need_apt+=(nodejs npm); fi
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
{ command -v prlimit && command -v setpriv; } >/dev/null || need_apt+=(util-linux)  # the sandboxes' exec chain
/sbin/ldconfig -p 2>/dev/null | grep 'libseccomp\.so\.2 ' >/dev/null || need_apt+=(libseccomp2)  # seccomp filter (grep reads all: pipefail)
if [ "${1:-}" = "--browser" ]; then
  need_apt=()
  command -v chromium >/dev/null || need_apt+=(chromium)
  command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
fi

if [ ${#need_apt[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing missing system packages: ${need_apt[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
else
  echo "missing system prerequisites: please install ${need_apt[*]} (python >= 3.11, node >= 18, bubblewrap, libseccomp2, util-linux; chromium for the browser tests)" >&2
  exit 1
fi
