#!/usr/bin/env bash
# Installs the Debian packages the tests need: Ansible, the lab's container and network
# tools, cloud-init (its schema validator), Chromium with a font for the web UI's browser
# test (playwright-core drives /usr/bin/chromium; its own browser downloads cannot be fetched
# here), and the PostgreSQL server the tests start for themselves (test/support/postgres.ts:
# the binaries only, in /usr/lib/postgresql/MAJOR/bin; Debian's own cluster on port 5432 is
# not created); QEMU, qemu-img, dosfstools and mtools for the lab's VM hosts (test/lab/vm.ts:
# guests with their own kernel, seed disks made without a mount); podman and podman-compose
# for the OCI images (scripts/package-images.js), with runc beside crun (crun refuses cgroups in
# hybrid mode, as on a machine that is itself a container), netavark and aardvark-dns (the
# compose network and its names; netavark sets that network up with iptables). Idempotent;
# needs root.
set -euo pipefail
packages=(ansible-core openssh-client openssh-server iproute2 debootstrap systemd-container cloud-init python3 ca-certificates openssl chromium fonts-liberation postgresql qemu-system-x86 qemu-utils dosfstools mtools e2fsprogs podman podman-compose crun runc netavark aardvark-dns iptables)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "system packages: all present"
  exit 0
fi
echo "system packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
if ! installed postgresql-common; then
  apt-get install -y -q --no-install-recommends postgresql-common
fi
# postgresql-common's createcluster.conf (a ucf-managed file its install writes) decides
# whether installing a server version creates and starts the cluster `main` on port 5432: it
# must not, the tests start servers of their own.
conf=/etc/postgresql-common/createcluster.conf
if ! grep -qE '^[[:space:]]*create_main_cluster[[:space:]]*=[[:space:]]*false' "$conf"; then
  if grep -qE '^[#[:space:]]*create_main_cluster[[:space:]]*=' "$conf"; then
    sed -ri 's/^[#[:space:]]*create_main_cluster[[:space:]]*=.*/create_main_cluster = false/' "$conf"
  else
    echo 'create_main_cluster = false' >>"$conf"
  fi
fi
apt-get install -y -q --no-install-recommends "${missing[@]}"
