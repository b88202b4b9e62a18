#!/usr/bin/env bash
# Installs the Debian packages lua-gpu needs to build, test and install, if any is missing.
# Non-interactive; as root it calls apt-get directly, otherwise through sudo.  The CUDA
# toolkit (headers and NVRTC under CUDA_HOME, default /usr/local/cuda) is not a Debian
# package here and is only checked.
set -euo pipefail

packages=(lua5.4 liblua5.4-dev lua-busted luarocks valgrind build-essential)

missing=()
for package in "${packages[@]}"; do
  # dpkg -s also lists removed-but-configured packages; require the "installed" state
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  # wait for another apt/dpkg run (another checkout installing at the same time) to finish
  apt_options=(-o DPkg::Lock::Timeout=600 -o Dpkg::Use-Pty=0)
  "${sudo[@]}" apt-get "${apt_options[@]}" update -qq
  "${sudo[@]}" apt-get "${apt_options[@]}" install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "deps: all of ${packages[*]} are installed"
fi

cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda_home/include/cuda.h" ]; then
  echo "deps: warning: no CUDA toolkit headers at $cuda_home/include/cuda.h (set CUDA_HOME)" >&2
fi
