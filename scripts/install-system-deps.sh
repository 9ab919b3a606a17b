#!/usr/bin/env bash
# Installs the Debian packages the tests need: Ansible, the lab's container and network
# tools, cloud-init (its schema validator), and Chromium with a font for the web UI's browser
# test (playwright-core drives /usr/bin/chromium; its own browser downloads cannot be fetched
# here). Idempotent; needs root.
set -euo pipefail
packages=(ansible-core openssh-client openssh-server iproute2 debootstrap systemd-container cloud-init python3 ca-certificates openssl chromium fonts-liberation)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "system packages: all present"
  exit 0
fi
echo "system packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
