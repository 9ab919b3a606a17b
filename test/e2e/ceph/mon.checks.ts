// The monitors as the cluster and its hosts see them: a watcher that asks `quorum_status` every
// 500 ms all along (through one librados session, as a client would), and the checks that
// every host's ceph.conf names the monitors of the map.
import { expect } from 'vitest';
import type { LabHost } from '../../lab/lab.js';

import type { CephSystem, Json } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

const WATCH_SCRIPT = String.raw`
import json, os, sys, time
import rados
out = open("/root/quorum.log", "a", buffering=1)
cluster = rados.Rados(conffile="/etc/ceph/ceph.conf", rados_id="admin")
cluster.conf_set("client_mount_timeout", "30")
cluster.connect(timeout=30)
while not os.path.exists("/root/quorum.stop"):
    started = time.time()
    try:
        ret, buf, outs = cluster.mon_command(json.dumps({"prefix": "quorum_status", "format": "json"}), b"", timeout=20)
        if ret == 0:
            data = json.loads(buf)
            out.write(json.dumps({"t": started, "took": time.time() - started, "quorum": data.get("quorum_names", []),
                                  "map": [m.get("name") for m in data.get("monmap", {}).get("mons", [])]}) + "\n")
        else:
            out.write(json.dumps({"t": started, "took": time.time() - started, "error": "%s %s" % (ret, outs)}) + "\n")
    except Exception as err:
        out.write(json.dumps({"t": started, "took": time.time() - started, "error": str(err)}) + "\n")
    time.sleep(max(0.0, 0.5 - (time.time() - started)))
`;

/** One answer of the watcher. */
export interface QuorumSample {
  t: number;
  took: number;
  quorum?: string[];
  map?: string[];
  error?: string;
}

/** What the watcher saw. */
export interface QuorumReport {
  samples: QuorumSample[];
  /** Answers with an error, or a quorum smaller than a majority of their map. */
  lost: QuorumSample[];
  /** The longest wait for an answer (an election in progress), in seconds. */
  longestStall: number;
  /** Every distinct monitor map seen, in order. */
  maps: string[];
}

/** Asks `quorum_status` every 500 ms on a host (a unit of its own) until stopped. */
export class QuorumWatcher {
  constructor(private readonly host: LabHost) {}

  async start(): Promise<void> {
    await this.host.exec('rm -f /root/quorum.log /root/quorum.stop && cat > /root/quorum.py', { input: WATCH_SCRIPT });
    await this.host.exec('systemd-run --unit=carapace-quorum-watch --collect python3 /root/quorum.py');
    await eventually('the quorum watcher to answer', async () => ((await this.read()).length > 0 ? true : undefined), 60_000);
  }

  async read(): Promise<QuorumSample[]> {
    const { stdout } = await this.host.exec('cat /root/quorum.log 2>/dev/null || true');
    return stdout
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as QuorumSample);
  }

  async stop(): Promise<QuorumReport> {
    await this.host.exec('touch /root/quorum.stop');
    await eventually(
      'the quorum watcher to stop',
      async () => ((await this.host.exec('systemctl is-active carapace-quorum-watch', { check: false })).stdout.trim() === 'active' ? undefined : true),
      60_000,
    );
    const samples = await this.read();
    const lost = samples.filter((s) => s.error !== undefined || (s.quorum ?? []).length < Math.floor((s.map ?? []).length / 2) + 1);
    const maps: string[] = [];
    for (const s of samples) {
      const map = (s.map ?? []).join(',');
      if (s.map && maps[maps.length - 1] !== map) maps.push(map);
    }
    return { samples, lost, longestStall: Math.max(0, ...samples.map((s) => s.took)), maps };
  }
}

/** The monitors of the map (names in rank order) and their mon_host value, read on a host. */
export async function monitorMap(sys: CephSystem, host: LabHost): Promise<{ names: string[]; monHost: string; ips: string[] }> {
  const dump = await sys.ceph<Json>(host, 'mon dump');
  const mons = [...(dump.mons as Json[])].sort((a, b) => Number(a.rank) - Number(b.rank));
  const vec = (m: Json): Json[] => (m.public_addrs?.addrvec ?? []) as Json[];
  return {
    names: mons.map((m) => String(m.name)),
    monHost: mons.map((m) => `[${vec(m).map((a) => `${a.type}:${a.addr}`).join(',')}]`).join(','),
    ips: mons.map((m) => String(vec(m)[0]?.addr ?? '').replace(/:\d+$/, '')),
  };
}

/** The mon_host line of a host's ceph.conf. */
export async function confMonHost(host: LabHost): Promise<string> {
  const { stdout } = await host.exec("sed -n 's/^[[:space:]]*mon[ _]host[[:space:]]*=[[:space:]]*//p' /etc/ceph/ceph.conf");
  return stdout.trim();
}

/** Every host given names, in its ceph.conf, exactly the monitors of the map, in rank order. */
export async function expectConfNamesMonitors(sys: CephSystem, via: LabHost, hosts: readonly LabHost[]): Promise<void> {
  const { monHost } = await monitorMap(sys, via);
  for (const host of hosts) expect(await confMonHost(host), `mon_host of ${host.name}'s ceph.conf`).toBe(monHost);
}

/** The state of a host's monitor unit and store: `active enabled`, `inactive disabled`, ... and whether the store is there. */
export async function monitorOnHost(host: LabHost): Promise<{ unit: string; store: boolean; archived: boolean; adminKey: boolean }> {
  const unit = `ceph-mon@${host.name}`;
  const { stdout } = await host.exec(
    `echo "$(systemctl is-active ${unit}) $(systemctl is-enabled ${unit} 2>/dev/null; true)"; test -d /var/lib/ceph/mon/ceph-${host.name} && echo store || echo none; ls -d /var/lib/ceph/mon/removed-ceph-${host.name}-* >/dev/null 2>&1 && echo archived || echo none; test -e /etc/ceph/ceph.client.admin.keyring && echo key || echo none`,
    { check: false },
  );
  const [state = '', store = '', archived = '', key = ''] = stdout.trim().split('\n');
  return { unit: state.trim(), store: store === 'store', archived: archived === 'archived', adminKey: key === 'key' };
}
