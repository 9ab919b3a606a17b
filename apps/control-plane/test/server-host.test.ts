import { hostProblem, isHost } from '@carapace/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeFacts } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';

const DISCOVERY = 'discovery-token-for-host-tests-0123456789';

// What a shell or ssh would read as an option, or what is no host at all.
const NOT_HOSTS = [
  '-oProxyCommand=touch /tmp/x',
  '-oProxyCommand=touch',
  '-Jx',
  '-',
  '..',
  '.',
  'a..b',
  '.example.com',
  'example.com.',
  '999.999.999.999',
  '256.1.1.1',
  '1.2.3',
  '010.0.0.1',
  '1.2.3.04',
  `${'a'.repeat(64)}.example.com`,
  'a'.repeat(255),
  `${'a'.repeat(63)}.`.repeat(4) + 'com',
  'host_name',
  'node-.example.com',
  '-node.example.com',
  'node.-example.com',
  'a b',
  'host\nname',
  'ünïcode.example.com',
  '[::1]',
  'fe80::1%eth0',
  ':::',
  '1:2:3:4:5:6:7:8:9',
  'example.com:22',
  '',
];

const HOSTS = [
  '10.0.0.1',
  '0.0.0.0',
  '255.255.255.255',
  '::1',
  '2001:db8::17',
  'fe80::1ff:fe23:4567:890a',
  '::ffff:192.0.2.128',
  'localhost',
  'node-1',
  'node-1.lab.example.com',
  'NODE1.Example.COM',
  'xn--bcher-kva.example',
  '1.2.3.example',
  '123abc',
  `${'a'.repeat(63)}.example.com`,
  // 4 labels of 61 characters and 3 dots: 247 characters
  Array.from({ length: 4 }, () => 'b'.repeat(61)).join('.'),
];

describe('hostProblem', () => {
  it('refuses what is neither an IP address nor a DNS name, with a reason', () => {
    for (const value of NOT_HOSTS) {
      expect(hostProblem(value), value).toEqual(expect.any(String));
      expect(isHost(value), value).toBe(false);
    }
    expect(hostProblem('-Jx')).toContain('starts with "-"');
    expect(hostProblem('a..b')).toContain('empty label');
    expect(hostProblem('999.999.999.999')).toContain('all digits');
    expect(hostProblem(`${'a'.repeat(64)}.example.com`)).toContain('longer than 63');
  });

  it('accepts IPv4 and IPv6 addresses and DNS names', () => {
    for (const value of HOSTS) expect(hostProblem(value), value).toBeNull();
  });
});

describe('server registration takes only hosts', () => {
  let h: Harness;
  let root: string;
  let n = 0;
  const nextId = () => `4c4c4544-0042-3510-8052-${String(++n).padStart(12, '0')}`;
  const register = (host: string, id = nextId()) =>
    h.request('POST', '/v1/server/', { headers: { authorization: DISCOVERY }, body: { id, host, username: 'ansible' } });

  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_DISCOVERY_TOKEN: DISCOVERY });
    root = await h.rootToken();
  });
  afterAll(() => h.stop());

  it('answers 400 with the contract error body to every host that is not one, and stores nothing', async () => {
    for (const host of NOT_HOSTS) {
      const id = nextId();
      const res = await register(host, id);
      expect(res.status, host).toBe(400);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.json).toMatchObject({ code: 400, error: expect.stringMatching(/^(BadRequest|InvalidJSONError)$/) });
      expect(res.json.description).toBe(res.json.message);
      expect((await h.request('GET', `/v1/server/${id}/`, { token: root })).status).toBe(404);
    }
    const res = await register('-oProxyCommand=touch');
    expect(res.json.description).toMatch(/"host" must be an IPv4 address, an IPv6 address or a DNS name: "-oProxyCommand=touch" is not \(it starts with "-"\)/);
  });

  it('registers IPv4, IPv6 and DNS hosts', async () => {
    for (const host of HOSTS) {
      const res = await register(host);
      expect(res.status, `${host}: ${res.body}`).toBe(200);
      expect(res.json.data).toMatchObject(host.includes('.') && !/[a-z]/i.test(host) ? { ip: host, fqdn: host } : { fqdn: host });
    }
    expect((await register('2001:db8::17')).json.data).toMatchObject({ ip: '2001:db8::17' });
  });

  it('refuses a re-registration with a bad host and keeps the stored one', async () => {
    const id = nextId();
    expect((await register('10.1.0.1', id)).status).toBe(200);
    expect((await register('-Jx', id)).status).toBe(400);
    const stored = await h.request('GET', `/v1/server/${id}/`, { token: root });
    expect(stored.json).toMatchObject({ version: 1, data: { ip: '10.1.0.1' } });
  });

  it('does not take a FQDN or an address that is not a host from gathered facts', async () => {
    const id = nextId();
    expect((await register('10.1.0.2', id)).status).toBe(200);
    const facts = { ...makeFacts('evil', '10.1.0.2'), fqdn: '-oProxyCommand=touch /tmp/x', default_ipv4: '-Jx' };
    const recorded = await h.container.services.servers.recordFacts(id, facts, null);
    expect(recorded.data).toMatchObject({ ip: '10.1.0.2', fqdn: '10.1.0.2', state: 'operational' });
    const good = await h.container.services.servers.recordFacts(id, { ...makeFacts('good', '10.1.0.3'), default_ipv4: '10.1.0.3' }, null);
    expect(good.data).toMatchObject({ ip: '10.1.0.3', fqdn: 'good.lab.example.com' });
  });
});
