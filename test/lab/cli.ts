/**
 * Manual use of the lab (as root):
 *
 *   npx tsx test/lab/cli.ts up N [--image NAME --extra PKG,PKG] [--disks D] [--vm]   boot N hosts that outlive this command
 *                                  (--image ceph: the Ceph-ready image; --disks D: D disks of 6 GiB per host;
 *                                  --vm: QEMU virtual machines with their own kernel, of the VM image)
 *   npx tsx test/lab/cli.ts up N --discover [--url URL] [--data-dir DIR] [--token T] [--timeout S]
 *                                  boot N hosts that register themselves with the running control plane
 *   npx tsx test/lab/cli.ts bridge                                 create the lab bridge (10.77.0.1) for a control plane to listen on
 *   npx tsx test/lab/cli.ts status                                 list lab hosts on this machine
 *   npx tsx test/lab/cli.ts down                                   remove the hosts `up` made (and stale ones)
 *   npx tsx test/lab/cli.ts sweep [--all]                          remove leftovers of dead processes (--all: every lab!)
 *   npx tsx test/lab/cli.ts image [--image NAME --extra PKG,PKG]   build (or find) an image (--image vm: the VM image)
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  LAB_STATE_DIR,
  createLab,
  destroyPersistentLabs,
  ensureImage,
  generateKeyPair,
  listLabSlots,
  sshOptions,
  sweepStale,
} from './lab.js';
import type { ImageOptions } from './lab.js';
import { LAB_GATEWAY, ensureBridge } from './lab.js';
import { forgetDiscovered, listensOnGateway, upDiscover } from './discover-cli.js';
import { CEPH_IMAGE } from './ceph.js';
import { VM_IMAGE } from './vm.js';

const CLI_DIR = join(LAB_STATE_DIR, 'cli');

function usage(): never {
  process.stderr.write(
    [
      'usage: npm run lab -- <command>   (or npx tsx test/lab/cli.ts <command>)',
      '  up N [--image NAME --extra PKG,...] [--disks D] [--vm]',
      '                                       boot N lab hosts (they keep running after this command); --image ceph:',
      '                                       the Ceph-ready image; --disks D: D disks of 6 GiB each (/dev/vdb, ...);',
      '                                       --vm: virtual machines (QEMU, their own kernel: LVM, dm-crypt) of the VM image',
      '  up N --discover [--vm] [--url URL] [--data-dir DIR] [--token TOKEN] [--timeout SECONDS]',
      '                                       boot N hosts seeded only with the user-data of `carapace cloud-config`',
      '                                       for the running control plane (default URL http://10.77.0.1:8080, data dir ./data);',
      '                                       wait until they registered and are operational',
      `  bridge                               create the lab bridge (${LAB_GATEWAY}) so a control plane can listen on it`,
      '  status                               list lab hosts on this machine',
      '  down                                 stop and remove the hosts made by `up` (and stale leftovers)',
      '  sweep [--all]                        remove leftovers of dead processes (--all: every lab, even live ones)',
      '  image [--image NAME --extra PKG,...] build the image if it is not cached (--image vm: the VM image)',
      '',
    ].join('\n'),
  );
  process.exit(2);
}

function imageOptions(values: { image?: string; extra?: string }): ImageOptions {
  const extra = values.extra?.split(',').filter((p) => p !== '') ?? [];
  if (values.image === 'ceph' && extra.length === 0) return CEPH_IMAGE;
  if (values.image === 'vm' && extra.length === 0) return VM_IMAGE;
  return extra.length > 0 || values.image !== undefined ? { name: values.image, extraPackages: extra } : {};
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      image: { type: 'string' },
      extra: { type: 'string' },
      disks: { type: 'string' },
      all: { type: 'boolean', default: false },
      discover: { type: 'boolean', default: false },
      vm: { type: 'boolean', default: false },
      url: { type: 'string' },
      'data-dir': { type: 'string' },
      token: { type: 'string' },
      timeout: { type: 'string' },
    },
  });
  const [command, arg] = positionals;
  switch (command) {
    case 'up': {
      const n = Number(arg);
      if (!Number.isInteger(n) || n < 1) usage();
      const diskCount = values.disks === undefined ? 0 : Number(values.disks);
      if (!Number.isInteger(diskCount) || diskCount < 0 || diskCount > 20) usage();
      const disks = Array.from({ length: diskCount }, () => 6 * 1024 ** 3);
      const existing = (await listLabSlots()).filter((s) => s.persistent);
      if (existing.length > 0)
        throw new Error(`a lab made by \`up\` exists already (${existing.map((s) => s.machine).join(' ')}); run \`down\` first`);
      if (values.discover) {
        const timeout = values.timeout === undefined ? 300 : Number(values.timeout);
        if (!Number.isFinite(timeout) || timeout <= 0) usage();
        await upDiscover({
          hosts: n,
          url: values.url,
          dataDir: values['data-dir'],
          token: values.token,
          timeoutS: timeout,
          image: imageOptions(values),
          disks,
          ...(values.vm ? { kind: 'vm' as const } : {}),
        });
        break;
      }
      const key = await generateKeyPair(CLI_DIR);
      const lab = await createLab({
        hosts: Array.from({ length: n }, () => ({ disks, ...(values.vm ? { kind: 'vm' as const } : {}) })),
        name: 'cli',
        sshKey: key,
        persistent: true,
        image: imageOptions(values),
      });
      const inventory = await lab.writeInventory(join(CLI_DIR, 'inventory.ini'));
      const first = lab.hosts[0];
      const lines = [
        '',
        ...lab.hosts.map((h) => `${h.name.padEnd(12)} ${h.ip.padEnd(12)} ${h.kind === 'vm' ? 'VM disk' : 'root'}: ${h.root}`),
        '',
        `ssh key:   ${key.privateKeyPath}`,
        `inventory: ${inventory}`,
        first ? `ssh:       ssh ${sshOptions(key.privateKeyPath).join(' ')} root@${first.ip}` : '',
        `ansible:   ANSIBLE_HOST_KEY_CHECKING=False ansible all -i ${inventory} -m ping`,
        'remove:    npx tsx test/lab/cli.ts down',
        '',
      ];
      process.stdout.write(lines.join('\n'));
      break;
    }
    case 'bridge': {
      await ensureBridge();
      process.stdout.write(`bridge carlab0 is up with ${LAB_GATEWAY}/24: start the control plane with CARAPACE_HTTP_HOST=${LAB_GATEWAY}\n`);
      break;
    }
    case 'down': {
      // The bridge stays while a control plane listens on it (it is needed for the next `up`).
      const removed = await destroyPersistentLabs({ removeBridge: !(await listensOnGateway()) });
      await forgetDiscovered();
      process.stdout.write(removed.length ? `removed ${removed.join(' ')}\n` : 'nothing to remove\n');
      break;
    }
    case 'sweep': {
      const removed = await sweepStale({ all: values.all, removeBridge: true });
      process.stdout.write(removed.length ? `removed ${removed.join(' ')}\n` : 'nothing stale\n');
      break;
    }
    case 'status': {
      const slots = await listLabSlots();
      if (slots.length === 0) process.stdout.write('no lab hosts\n');
      for (const s of slots)
        process.stdout.write(
          `${s.machine.padEnd(10)} ${s.hostname.padEnd(12)} ${s.ip.padEnd(12)} ${s.kind.padEnd(9)} lab=${s.lab} owner=${s.persistent ? 'cli' : `pid ${s.pid}`} ${s.running ? 'running' : 'stopped'}\n`,
        );
      break;
    }
    case 'image': {
      const image = await ensureImage(imageOptions(values));
      process.stdout.write(`${image.name}-${image.key}: ${image.rootfs} (built ${image.builtAt} in ${image.buildSeconds}s)\n`);
      break;
    }
    default:
      usage();
  }
}

main().then(
  // Containers of `up` are detached children: do not wait for them.
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
