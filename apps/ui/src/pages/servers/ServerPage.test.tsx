// @vitest-environment happy-dom
import '../../test/setup.ts';
import type { Server, ServerFacts } from '@carapace/models';
import { fireEvent, screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { json, makeRole, mockFetch, page, renderApp, selfHandler, storeSession } from '../../test/harness.tsx';

const GiB = 1024 ** 3;
const facts: ServerFacts = {
  hostname: 'node1',
  fqdn: 'node1.lab.example.com',
  os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0-18-amd64' },
  cpu: { count: 8, model: 'Intel(R) Xeon(R) Silver 4210R CPU @ 2.40GHz' },
  memory: { total_bytes: 64 * GiB },
  interfaces: [
    {
      name: 'eth0',
      mac: '52:54:00:12:34:56',
      mtu: 1500,
      addresses: [
        { family: 'inet', address: '10.0.0.11', prefix: 24 },
        { family: 'inet6', address: 'fe80::5054:ff:fe12:3456', prefix: 64 },
      ],
      default_route: true,
    },
  ],
  default_ipv4: '10.0.0.11',
  disks: [
    { name: 'vdb', path: '/dev/vdb', size_bytes: 4000 * GiB, rotational: true, type: 'disk', model: 'ST4000NM0035', serial: 'S0', read_only: false, removable: false, fstype: null, mountpoint: null, holders: [], partitions: [] },
  ],
  gathered_at: 1_795_000_000,
};
const server: Server = {
  id: '00000000-0000-4000-8000-000000000011',
  model: 'server',
  version: 3,
  time_updated: 1_795_000_000,
  time_deleted: 0,
  initiator_id: null,
  data: { name: 'node1', fqdn: 'node1.lab.example.com', ip: '10.0.0.11', username: 'ansible', state: 'operational', cluster_id: null, facts, facts_error: null, ssh_host_key: null },
};

describe('the server page', () => {
  it('shows the disks with size and model, and the interfaces with their addresses', async () => {
    storeSession();
    mockFetch(selfHandler(makeRole(['view_server', 'view_server_versions'])), (url) => {
      if (url.pathname === `/v1/server/${server.id}/version/`) return page([server]);
      if (url.pathname === `/v1/server/${server.id}/`) return json(server);
      return undefined;
    });
    renderApp(`/servers/${server.id}`);
    const disks = await screen.findByRole('table', { name: 'Disks' });
    expect(within(disks).getByText('/dev/vdb')).toBeTruthy();
    expect(within(disks).getByText('3.9 TiB')).toBeTruthy();
    expect(within(disks).getByText('ST4000NM0035')).toBeTruthy();
    expect(screen.getByText('64.0 GiB')).toBeTruthy();

    fireEvent.click(screen.getByRole('tab', { name: /Network/ }));
    const ifaces = await screen.findByRole('table', { name: 'Network interfaces' });
    expect(within(ifaces).getByText('10.0.0.11/24')).toBeTruthy();
    expect(within(ifaces).getByText('fe80::5054:ff:fe12:3456/64')).toBeTruthy();

    fireEvent.click(screen.getByRole('tab', { name: 'Version history' }));
    const versions = await screen.findByRole('table', { name: 'Version history' });
    expect(within(versions).getByText('3')).toBeTruthy();
  });
});
