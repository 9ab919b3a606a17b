// The NoCloud user-data the lab's own tests seed a host with: a sudo user `ansible` with the
// test's key, and a marker file that proves cloud-init ran the seed's runcmd.

/** The marker's path on the host, and what it holds. */
export const SEEDED_MARKER = { path: '/var/lib/carapace-seeded', content: 'seeded-by-cloud-init\n' };

/** `#cloud-config` user-data: the user `ansible` (passwordless sudo) with `publicKey`, and the marker file. */
export function ansibleUserSeed(publicKey: string): string {
  return [
    '#cloud-config',
    'users:',
    '  - name: ansible',
    '    shell: /bin/bash',
    '    sudo: "ALL=(ALL) NOPASSWD:ALL"',
    '    ssh_authorized_keys:',
    `      - ${publicKey}`,
    'runcmd:',
    `  - [ sh, -c, 'echo ${SEEDED_MARKER.content.trim()} > ${SEEDED_MARKER.path}' ]`,
    '',
  ].join('\n');
}
