/**
 * The one remote command that gathers a server's facts: a POSIX sh script sent on standard
 * input of `/bin/sh -s`. Each section is framed by marker lines carrying its name and exit
 * status so that a missing tool is reported as such:
 *
 * ```
 * @@carapace-facts begin lsblk@@
 * {"blockdevices": [...]}
 * @@carapace-facts end lsblk 0@@
 * ```
 *
 * Every command reads /dev/null: the script itself arrives on standard input.
 *
 * `dev-nodes` lists the block device nodes of the host's own `/dev` (a container shares the
 * kernel's sysfs, so lsblk alone shows the machine's devices): per node, a line
 * `@node MAJ:MIN PATH` (major and minor in hex, as `stat %t:%T` prints them), the node's
 * signatures as `blkid -p -o export` prints them (`TYPE=ext4`, `PTTYPE=gpt`, ...), then
 * `@probe ok` or `@probe failed` (blkid could not read the node, even with `sudo -n`), or
 * only `@probe udev` when udev's database describes the device: lsblk read its signatures
 * there, and probing again would wake sleeping disks and call sudo on every ordinary host.
 */
export const FACTS_SCRIPT = `LC_ALL=C
export LC_ALL
PATH="$PATH:/usr/sbin:/sbin:/usr/bin:/bin"
export PATH
section() {
  name=$1
  shift
  printf '@@carapace-facts begin %s@@\\n' "$name"
  "$@" </dev/null
  rc=$?
  printf '\\n@@carapace-facts end %s %s@@\\n' "$name" "$rc"
}
os_release() { cat /etc/os-release 2>/dev/null || cat /usr/lib/os-release; }
probe() {
  out=$(blkid -p -o export "$1" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ] && [ -n "$out" ] && command -v sudo >/dev/null 2>&1; then
    out=$(sudo -n blkid -p -o export "$1" 2>&1)
    rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    printf '%s\\n@probe ok\\n' "$out"
  elif [ "$rc" -eq 2 ] && [ -z "$out" ]; then
    printf '@probe ok\\n'
  else
    printf '@probe failed\\n'
  fi
}
dev_nodes() {
  for node in /dev/*; do
    if [ -b "$node" ] && [ ! -L "$node" ]; then
      hex=$(stat -c '%t:%T' "$node")
      printf '@node %s %s\\n' "$hex" "$node"
      if [ -e "/run/udev/data/b$(printf '%d:%d' "0x\${hex%:*}" "0x\${hex#*:}")" ]; then
        printf '@probe udev\\n'
      else
        probe "$node"
      fi
    fi
  done
}
section hostname hostname
section fqdn hostname -f
section kernel uname -r
section os-release os_release
section cpuinfo cat /proc/cpuinfo
section nproc getconf _NPROCESSORS_CONF
section meminfo cat /proc/meminfo
section lsblk lsblk -J -b -O
section dev-nodes dev_nodes
section ip-addr ip -j addr show
section ip-route4 ip -j -4 route show default
section ip-route6 ip -j -6 route show default
`;

/** The remote command that runs {@link FACTS_SCRIPT}. */
export const FACTS_COMMAND = '/bin/sh -s';
