// The parser of a status collection's outputs (`parseCephReport`), on recorded outputs of
// Ceph 16.2 (Pacific) of a three-host cluster: healthy, and with a host down (its OSD and its
// monitor), `noout` set and a muted check. The fixtures follow Pacific's JSON formats (see
// test/fixtures/ceph-pacific/README.md); test/e2e/cluster-status.e2e.test.ts serves the same files.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { CephReportSchema } from '@carapace/models';
import { CephOutputError, parseCephReport, playbookForCheck, type CephOutputs } from '../src/infrastructure/ceph-report.js';

const FIXTURES = join(import.meta.dirname, '../../../test/fixtures/ceph-pacific');

function outputs(kind: 'ok' | 'warn'): CephOutputs {
  const read = (name: string) => readFileSync(join(FIXTURES, kind, `${name}.json`), 'utf8');
  return { status: read('status'), df: read('df'), osdTree: read('osd_tree'), osdDump: read('osd_dump'), monDump: read('mon_dump'), mgrDump: read('mgr_dump') };
}

const SERVERS = new Map([
  ['carlab1.lab', 's1'],
  ['carlab1', 's1'],
  ['carlab2', 's2'],
]);

describe('parseCephReport on Pacific outputs', () => {
  it('reads a healthy cluster: health, quorum, managers, OSDs by host, PGs, capacity, pools and IO', () => {
    const r = parseCephReport(outputs('ok'), SERVERS);
    expect(Value.Check(CephReportSchema, r)).toBe(true);
    expect(r.fsid).toBe('5c8b3d3e-2f0a-4a57-9d36-7b6f1e0c9a41');
    expect(r.health).toEqual({ status: 'HEALTH_OK', checks: [] });
    expect(r.monitors).toEqual({ total: 3, in_quorum: ['carlab1', 'carlab2', 'carlab3'], out_of_quorum: [] });
    expect(r.managers).toEqual({ active: 'carlab1', standbys: ['carlab2'] });
    expect(r.osds.total).toBe(3);
    expect(r.osds.up).toBe(3);
    expect(r.osds.in).toBe(3);
    expect(r.osds.by_host.map((h) => [h.host, h.server_id, h.total, h.up, h.in])).toEqual([
      ['carlab1', 's1', 1, 1, 1],
      ['carlab2', 's2', 1, 1, 1],
      ['carlab3', null, 1, 1, 1],
    ]);
    expect(r.osds.by_host[0]?.osds).toEqual([{ id: 0, up: true, in: true, device_class: 'hdd' }]);
    expect(r.pgs).toEqual({ total: 33, states: [{ state: 'active+clean', count: 33 }] });
    const df = JSON.parse(outputs('ok').df) as { stats: Record<string, number> };
    expect(r.capacity.raw_total_bytes).toBe(df.stats.total_bytes);
    expect(r.capacity.raw_used_bytes).toBe(df.stats.total_used_raw_bytes);
    expect(r.capacity.raw_available_bytes).toBe(df.stats.total_avail_bytes);
    // Both pools have 3 replicas.
    expect(r.capacity.usable_total_bytes).toBe(Math.floor((df.stats.total_bytes ?? 0) / 3));
    expect(r.capacity.pools.map((p) => [p.id, p.name, p.size, p.objects])).toEqual([
      [1, 'device_health_metrics', 3, 0],
      [2, 'rbd', 3, 24],
    ]);
    const rbd = r.capacity.pools[1];
    expect(rbd?.stored_bytes).toBe(37_748_736);
    expect(rbd?.used_bytes).toBe(113_246_208);
    expect(rbd?.percent_used).toBeCloseTo(0.198, 2); // Ceph's ratio, as percent
    expect(r.io).toEqual({ read_bytes_per_second: 2133, write_bytes_per_second: 1398101, read_operations_per_second: 2, write_operations_per_second: 21 });
  });

  it('reads a cluster with a host down: checks worst first with their playbooks, the monitor out of quorum, the OSD down on its host', () => {
    const r = parseCephReport(outputs('warn'), SERVERS);
    expect(Value.Check(CephReportSchema, r)).toBe(true);
    expect(r.health.status).toBe('HEALTH_WARN');
    expect(r.health.checks.map((c) => [c.code, c.count, c.muted, c.playbook])).toEqual([
      ['AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED', 1, true, 'update_ceph_configuration'],
      ['MON_DOWN', 1, false, 'replace_mon'],
      ['OSDMAP_FLAGS', 1, false, 'maintenance_exit'],
      ['OSD_DOWN', 1, false, 'replace_osd'],
      ['OSD_HOST_DOWN', 1, false, 'replace_osd'],
      ['PG_DEGRADED', 49, false, null],
    ]);
    expect(r.health.checks.find((c) => c.code === 'OSD_DOWN')?.summary).toBe('1 osds down');
    expect(r.monitors).toEqual({ total: 3, in_quorum: ['carlab1', 'carlab2'], out_of_quorum: ['carlab3'] });
    expect(r.managers).toEqual({ active: 'carlab1', standbys: [] });
    expect([r.osds.total, r.osds.up, r.osds.in]).toEqual([3, 2, 3]);
    expect(r.osds.by_host.find((h) => h.host === 'carlab3')).toEqual({
      host: 'carlab3',
      server_id: null,
      total: 1,
      up: 0,
      in: 1,
      osds: [{ id: 2, up: false, in: true, device_class: 'hdd' }],
    });
    expect(r.pgs.states).toEqual([
      { state: 'active+undersized', count: 17 },
      { state: 'active+undersized+degraded', count: 16 },
    ]);
    expect(r.io.write_bytes_per_second).toBe(0);
  });

  it('reads the manager dump as the runner reduces it exactly as the whole dump', () => {
    const whole = outputs('ok');
    // What apps/runner's reduceMgrDump sends for this dump.
    const reduced = { ...whole, mgrDump: '{"active_name":"carlab1","available":true,"standbys":[{"name":"carlab2"}]}' };
    expect(parseCephReport(reduced)).toEqual(parseCephReport(whole));
  });

  it('refuses outputs that are not JSON, and a status without fsid or health', () => {
    const ok = outputs('ok');
    expect(() => parseCephReport({ ...ok, df: 'Error initializing cluster client' })).toThrow(new CephOutputError('ceph df did not print JSON: "Error initializing cluster client"'));
    expect(() => parseCephReport({ ...ok, osdTree: '[1]' })).toThrow(/ceph osd tree did not print a JSON object/);
    expect(() => parseCephReport({ ...ok, status: '{"health":{"status":"HEALTH_OK"}}' })).toThrow(/no fsid/);
    expect(() => parseCephReport({ ...ok, status: '{"fsid":"x","health":{"status":"BAD"}}' })).toThrow(/health.status is "BAD"/);
  });

  it('counts an OSD of the map that is in no CRUSH host under no host; a cluster without pools divides by 3', () => {
    const ok = outputs('ok');
    const dump = JSON.parse(ok.osdDump) as { osds: Record<string, unknown>[] };
    dump.osds.push({ osd: 7, up: 0, in: 0 });
    const df = JSON.parse(ok.df) as { pools: unknown[]; stats: { total_bytes: number } };
    df.pools = [];
    const r = parseCephReport({ ...ok, osdDump: JSON.stringify(dump), df: JSON.stringify(df) });
    expect(r.osds.total).toBe(4);
    expect(r.osds.by_host.at(-1)).toEqual({ host: '', server_id: null, total: 1, up: 0, in: 0, osds: [{ id: 7, up: false, in: false, device_class: null }] });
    expect(r.capacity.usable_total_bytes).toBe(Math.floor(df.stats.total_bytes / 3));
  });

  it('maps codes to the playbooks that address them', () => {
    expect(playbookForCheck('OSD_DOWN', '1 osds down')).toBe('replace_osd');
    expect(playbookForCheck('OSD_HOST_DOWN', '1 host (1 osds) down')).toBe('replace_osd');
    expect(playbookForCheck('MON_DOWN', '1/3 mons down')).toBe('replace_mon');
    expect(playbookForCheck('OSDMAP_FLAGS', 'noout flag(s) set')).toBe('maintenance_exit');
    expect(playbookForCheck('OSDMAP_FLAGS', 'pauserd,pausewr flag(s) set')).toBeNull();
    expect(playbookForCheck('POOL_NO_REDUNDANCY', '1 pool(s) have no replicas configured')).toBe('add_pool');
    expect(playbookForCheck('POOL_NEAR_FULL', '1 pool(s) nearfull')).toBe('add_osd');
    expect(playbookForCheck('MON_CLOCK_SKEW', 'clock skew detected')).toBeNull();
  });
});
