/** What the machine must have to run a lab (Linux, root, the tools), and the check createLab makes. */
import { which } from './sys.js';

/** The tools the lab runs, and the Debian packages that have them. */
const REQUIRED_TOOLS: Record<string, string> = {
  'systemd-nspawn': 'systemd-container',
  ip: 'iproute2',
  nsenter: 'util-linux',
  flock: 'util-linux',
  losetup: 'mount',
  'ssh-keygen': 'openssh-client',
  ssh: 'openssh-client',
};

/** What is missing on this machine to run a lab (empty when nothing is). */
export async function checkRequirements(): Promise<string[]> {
  const missing: string[] = [];
  if (process.platform !== 'linux') missing.push('Linux');
  if (process.getuid?.() !== 0) missing.push('root (the lab creates namespaces, mounts and containers)');
  for (const [tool, pkg] of Object.entries(REQUIRED_TOOLS))
    if (!(await which(tool))) missing.push(`${tool} (apt-get install -y ${pkg})`);
  return missing;
}

export async function assertRequirements(): Promise<void> {
  const missing = await checkRequirements();
  if (missing.length) throw new Error(`the lab cannot run on this machine; missing: ${missing.join('; ')}`);
}
