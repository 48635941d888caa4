#!/usr/bin/env bash
# Installs every Debian package the project builds, tests and demonstrates with.
set -euo pipefail

packages=(
  build-essential cmake ninja-build clang lld libclang-rt-14-dev clang-format
  clang-tidy libgtest-dev libgmock-dev libbenchmark-dev
  libfmt-dev libcli11-dev libtomlplusplus-dev nlohmann-json3-dev
  liburing-dev libibverbs-dev libbpf-dev
  ibverbs-utils perftest librdmacm-dev rdmacm-utils ucx-utils libfabric-bin
  openmpi-bin libopenmpi-dev
  iproute2 procps nftables iperf3 ethtool tshark mptcpize shellcheck
  sockperf linux-perf
  gnuplot-nox python3 python3-matplotlib python3-scapy python3-pytest
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}); run as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
