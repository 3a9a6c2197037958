#!/usr/bin/env bash
# Installs wattcal's build and run dependencies from Debian 12 packages (run as root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
packages=(
  build-essential cmake pkg-config
  libceres-dev libeigen3-dev libomp-dev
  libcsv-dev
  libboost-filesystem-dev libboost-iostreams-dev libboost-system-dev libboost-dev
  gnuplot-nox libgnuplot-iostream-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev clang-format
  python3 python3-numpy python3-scipy
  python3-venv python3-dev pybind11-dev python3-pandas python3-matplotlib python3-pytest
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install_deps: all ${#packages[@]} packages present" >&2
fi
