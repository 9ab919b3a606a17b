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
section hostname hostname
section fqdn hostname -f
section kernel uname -r
section os-release os_release
section cpuinfo cat /proc/cpuinfo
section nproc getconf _NPROCESSORS_CONF
section meminfo cat /proc/meminfo
section lsblk lsblk -J -b -O
section ip-addr ip -j addr show
section ip-route4 ip -j -4 route show default
section ip-route6 ip -j -6 route show default
`;

/** The remote command that runs {@link FACTS_SCRIPT}. */
export const FACTS_COMMAND = '/bin/sh -s';
