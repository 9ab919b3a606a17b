// A user who may edit a playbook configuration writes the inventory and extra variables
// ansible-playbook reads on the runner: nothing in them may run code on the runner. Strings
// are never templated (real ansible-playbook runs below); connection variables that act on
// the runner are refused before the work dir exists.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { helloWorldPlugin, type PluginServer } from '@carapace/playbooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnsibleRun } from '../src/executor/index.js';
import { configurationProblem, markUnsafe, REFUSED_VARIABLES, unsafeInventory } from '../src/executor/inventory-vars.js';
import { prepareWorkDir } from '../src/executor/work-dir.js';
import { fixture, HOST, localInventory, localSpec, RecordingSink, tempDir } from './fixtures/executor/executor-helpers.js';

const PRODUCTION = { allowLocalConnection: false };

let tmp = '';
let removeTmp: () => Promise<void> = async () => undefined;
beforeAll(async () => {
  ({ dir: tmp, remove: removeTmp } = await tempDir('carapace-vars-'));
});
afterAll(() => removeTmp());

/** An inventory of one group `mons` with one host, the variables at each level given. */
function inventoryWith(levels: { all?: Record<string, unknown>; group?: Record<string, unknown>; host?: Record<string, unknown> }): Record<string, unknown> {
  return {
    ...(levels.all ? { all: { vars: levels.all } } : {}),
    mons: { hosts: ['10.0.0.1'], ...(levels.group ? { vars: levels.group } : {}) },
    _meta: { hostvars: { '10.0.0.1': { ansible_user: 'ansible', ...levels.host } } },
  };
}

/** Where a variable may be set, and how configurationProblem names that place. */
const LEVELS = [
  ['global_vars', (vars: Record<string, unknown>) => [inventoryWith({}), vars] as const],
  ['group "all"', (vars: Record<string, unknown>) => [inventoryWith({ all: vars }), {}] as const],
  ['group "mons"', (vars: Record<string, unknown>) => [inventoryWith({ group: vars }), {}] as const],
  ['host "10.0.0.1"', (vars: Record<string, unknown>) => [inventoryWith({ host: vars }), {}] as const],
] as const;

function problemAt(level: (typeof LEVELS)[number], vars: Record<string, unknown>, policy = PRODUCTION): string | null {
  const [inventory, globalVars] = level[1](vars);
  return configurationProblem(inventory, globalVars, policy);
}

const servers: PluginServer[] = [1, 2].map((n) => ({
  id: `00000000-0000-4000-8000-00000000000${n}`,
  version: 1,
  name: `node${n}`,
  fqdn: `node${n}.example.com`,
  ip: `10.0.0.${10 + n}`,
  username: 'ansible',
  state: 'operational',
  cluster_id: null,
  facts: {},
}));
const helloWorld = helloWorldPlugin.buildConfiguration({ id: 'c1', name: 'c1', configuration: {} }, servers, {});

describe('configurationProblem', () => {
  it("accepts the builders' configurations and ordinary variables", () => {
    expect(configurationProblem(helloWorld.inventory, helloWorld.global_vars, PRODUCTION)).toBeNull();
    for (const level of LEVELS) {
      const vars = {
        ansible_connection: 'ssh',
        ansible_port: 2222,
        ansible_ssh_port: '22',
        ansible_user: 'ceph-admin$',
        ansible_become: true,
        ansible_become_user: 'root',
        ansible_become_method: 'sudo',
        ansible_become_password: 'secret',
        ansible_python_interpreter: '/usr/bin/python3',
        ansible_ssh_timeout: 30,
        ansible_ssh_pipelining: true,
        // templates are allowed: they stay text (see the runs below)
        motd: "{{ lookup('pipe', 'id') }}",
        nested: { '{{ key }}': ['{{ x }}', { deep: 1 }] },
      };
      expect(problemAt(level, vars), level[0]).toBeNull();
    }
    expect(configurationProblem({ mons: ['10.0.0.1'], osds: { children: ['mons'] }, ungrouped: { hosts: [] } }, {}, PRODUCTION)).toBeNull();
  });

  it('refuses every variable of REFUSED_VARIABLES at every level, by name and with the reason', () => {
    expect(Object.keys(REFUSED_VARIABLES).length).toBeGreaterThanOrEqual(25);
    for (const [name, reason] of Object.entries(REFUSED_VARIABLES)) {
      for (const level of LEVELS) {
        const problem = problemAt(level, { [name]: 'x' });
        expect(problem, `${name} in ${level[0]}`).toBe(`${JSON.stringify(name)} in ${level[0]}: refused: ${reason}`);
      }
    }
  });

  it('refuses connections other than ssh, and local ones unless allowed', () => {
    for (const level of LEVELS) {
      for (const connection of ['local', 'ansible.builtin.local', 'paramiko_ssh', 'smart', 'community.docker.docker', 'winrm', 'psrp', '{{ c }}', 7]) {
        expect(problemAt(level, { ansible_connection: connection }), `${String(connection)} in ${level[0]}`).toMatch(
          new RegExp(`^"ansible_connection" in ${level[0]}: refused: .* is not "ssh" \\(other connections run tasks on the runner`),
        );
      }
      expect(problemAt(level, { ansible_connection: 'local' }, { allowLocalConnection: true })).toBeNull();
      expect(problemAt(level, { ansible_connection: 'paramiko_ssh' }, { allowLocalConnection: true })).toContain('refused');
    }
  });

  it('refuses names that are not variable names, and values of the wrong form', () => {
    const cases: [Record<string, unknown>, string][] = [
      // the ssh plugin looks its host up under this literal name, after ansible_host
      [{ "delegated_vars['ansible_host']": '-oProxyCommand=x' }, 'not a variable name'],
      [{ 'ansible ssh args': 'x' }, 'not a variable name'],
      [{ '9lives': 1 }, 'not a variable name'],
      [{ ansible_port: '22 -oProxyCommand=x' }, 'is not a TCP port'],
      [{ ansible_port: 0 }, 'is not a TCP port'],
      [{ ansible_port: 70_000 }, 'is not a TCP port'],
      [{ ansible_user: 'root -oProxyCommand=x' }, 'is not a user name'],
      [{ ansible_ssh_user: '-lroot' }, 'is not a user name'],
      [{ ansible_python_interpreter: '/usr/bin/python3; touch /tmp/x' }, 'is not an absolute path without spaces or "auto"'],
      [{ ansible_perl_interpreter: 'perl' }, 'is not an absolute path'],
      [{ ansible_interpreter_python_fallback: ['/usr/bin/python3', 'python; id'] }, 'must be a list of absolute paths'],
      [{ x: { a: [{ __ansible_unsafe: 'y' }] } }, 'holds the key "__ansible_unsafe"'],
      [{ x: { __ansible_vault: '$ANSIBLE_VAULT;1.1;AES256' } }, 'holds the key "__ansible_vault"'],
    ];
    for (const level of LEVELS) {
      for (const [vars, expected] of cases) {
        const problem = problemAt(level, vars);
        expect(problem, `${JSON.stringify(vars)} in ${level[0]}`).toContain(expected);
        expect(problem).toContain(`in ${level[0]}`);
      }
    }
  });

  it('refuses group names Ansible would template, and groups its script inventory reads otherwise', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ "g{{ lookup('pipe', 'id') }}": { hosts: ['10.0.0.1'] } }, 'is not a group name'],
      [{ mons: { children: ['{{ x }}'] } }, 'children of group "mons": "{{ x }}" is not a group name'],
      [{ mons: { children: 'osds' } }, '"children" must be a list'],
      // a group with none of hosts/vars/children is a host of its name with these variables
      [{ 'evil-host': { ansible_host: '-oProxyCommand=x' } }, 'group "evil-host" is neither a list of hosts nor an object'],
      [{ mons: 'x' }, 'group "mons" is neither'],
      [{ mons: { hosts: { '10.0.0.1': {} } } }, 'group "mons": "hosts" must be a list of hosts'],
      [{ mons: { hosts: ['10.0.0.1'], vars: ['x'] } }, 'the variables of group "mons" are not an object'],
      [{ _meta: { hostvars: { '10.0.0.1': 'x' } } }, 'the variables of host "10.0.0.1" are not an object'],
      [{ _meta: { hostvars: [] } }, '_meta.hostvars is not an object'],
    ];
    for (const [inventory, expected] of cases) expect(configurationProblem(inventory, {}, PRODUCTION), JSON.stringify(inventory)).toContain(expected);
  });
});

describe('markUnsafe and unsafeInventory', () => {
  it('wrap every string value at any depth, and keep keys, numbers, booleans and null', () => {
    expect(markUnsafe({ a: '{{ x }}', b: [1, 'y', { c: null, d: true }], '{{ k }}': 2 })).toEqual({
      a: { __ansible_unsafe: '{{ x }}' },
      b: [1, { __ansible_unsafe: 'y' }, { c: null, d: true }],
      '{{ k }}': 2,
    });
  });

  it('keep hosts and group names plain, mark the variables, and leave out what Ansible ignores', () => {
    expect(
      unsafeInventory({
        mons: ['10.0.0.1'],
        osds: { hosts: ['10.0.0.2'], vars: { a: 'x' }, children: ['mons'], extra: 'ignored' },
        _meta: { hostvars: { '10.0.0.1': { ansible_user: 'ansible', ansible_port: 22 } }, other: 1 },
      }),
    ).toEqual({
      mons: ['10.0.0.1'],
      osds: { hosts: ['10.0.0.2'], vars: { a: { __ansible_unsafe: 'x' } }, children: ['mons'] },
      _meta: { hostvars: { '10.0.0.1': { ansible_user: { __ansible_unsafe: 'ansible' }, ansible_port: 22 } } },
    });
  });
});

describe('a configuration that would act on the runner is refused before anything starts', () => {
  it('prepareWorkDir throws for each refused variable at each level, and creates nothing', async () => {
    let n = 0;
    for (const name of Object.keys(REFUSED_VARIABLES)) {
      for (const level of LEVELS) {
        n += 1;
        const [inventory, globalVars] = level[1]({ [name]: '-oProxyCommand=touch /tmp/carapace-never' });
        const input = {
          workRoot: join(tmp, 'prepare'),
          executionId: `refused-${n}`,
          globalVars,
          inventory,
          knownHostsFile: undefined,
          callbackPluginDir: '/opt/carapace/callback_plugins',
          shared: { roles: '/opt/carapace/roles', library: '/opt/carapace/library', moduleUtils: '/opt/carapace/module_utils' },
          maxForks: 20,
        };
        await expect(prepareWorkDir(input)).rejects.toThrow(`refused to run: ${JSON.stringify(name)} in ${level[0]}: refused: `);
        expect(existsSync(join(tmp, 'prepare', `refused-${n}`))).toBe(false);
      }
    }
  });

  it('a real run with ansible_connection: local fails with the reason, starts nothing, and runs without that setting only', async () => {
    const sink = new RecordingSink();
    const spec = localSpec(join(tmp, 'work'), { allowLocalConnection: false });
    const run = startAnsibleRun(spec, sink, { contentDir: fixture('success') });
    expect(await run.result).toEqual({
      outcome: 'failed',
      exitCode: null,
      signal: null,
      reason:
        'cannot prepare the run: refused to run: "ansible_connection" in host "127.0.0.1": refused: "local" is not "ssh" ' +
        '(other connections run tasks on the runner or skip its key and host key checks)',
    });
    expect(run.pid).toBeUndefined();
    expect(sink.steps).toEqual([]);
    expect(existsSync(join(tmp, 'work', spec.executionId))).toBe(false);
  });

  it('a real run with ssh options in each place fails before ssh could run them', async () => {
    const marker = join(tmp, 'proxy-command-ran');
    const hostile = { ansible_ssh_common_args: `-oProxyCommand="touch ${marker}"` };
    for (const level of LEVELS) {
      const [inventory, globalVars] = level[1](hostile);
      const spec = localSpec(join(tmp, 'work'), { configuration: { global_vars: globalVars, inventory }, allowLocalConnection: false });
      const run = startAnsibleRun(spec, new RecordingSink(), { contentDir: fixture('success') });
      const result = await run.result;
      expect(result.outcome).toBe('failed');
      expect(result.reason).toContain(`refused to run: "ansible_ssh_common_args" in ${level[0]}: refused: adds options to ssh`);
      expect(run.pid).toBeUndefined();
    }
    expect(existsSync(marker)).toBe(false);
  });
});

describe('strings of a configuration are never templated (real ansible-playbook)', () => {
  it('a lookup in global, "all", group, host and nested values reaches the tasks as text; nothing runs', async () => {
    const marker = (where: string): string => join(tmp, `pwned-${where}`);
    const lookup = (where: string): string => `{{ lookup('pipe', 'touch ${marker(where)}') }}`;
    const outputFile = join(tmp, 'unsafe-output.txt');
    const inventory = localInventory({ from_host: lookup('host') });
    inventory.all = { vars: { from_all: lookup('all') } };
    inventory.fixture = { hosts: [HOST], vars: { from_group: lookup('group') } };
    const sink = new RecordingSink();
    const spec = localSpec(join(tmp, 'work'), {
      configuration: {
        global_vars: { from_global: lookup('global'), nested: { list: [{ deep: lookup('nested') }] }, port_number: 8085, output_file: outputFile },
        inventory,
      },
    });
    const result = await startAnsibleRun(spec, sink, { contentDir: fixture('unsafe') }).result;
    expect(result, sink.text).toEqual({ outcome: 'completed', exitCode: 0, signal: null, reason: null });
    expect(sink.steps.map((s) => [s.name, s.result])).toEqual([
      ['Show the values', 'ok'],
      ['Write a value into a file', 'ok'],
    ]);
    expect(sink.text).toContain(
      `"msg": "global=${lookup('global')} all=${lookup('all')} group=${lookup('group')} host=${lookup('host')} nested=${lookup('nested')} port=8086"`,
    );
    expect(await readFile(outputFile, 'utf8')).toBe(lookup('global'));
    for (const where of ['global', 'all', 'group', 'host', 'nested']) expect(existsSync(marker(where)), where).toBe(false);
  }, 120_000);

  it("the hello_world builder's configuration runs under the production policy, its values intact", async () => {
    const sink = new RecordingSink();
    const spec = localSpec(join(tmp, 'work'), { configuration: helloWorld, allowLocalConnection: false });
    const result = await startAnsibleRun(spec, sink, { contentDir: fixture('show-vars') }).result;
    expect(result, sink.text).toEqual({ outcome: 'completed', exitCode: 0, signal: null, reason: null });
    // The two hosts run side by side (Ansible's forks): either may finish first.
    expect(sink.steps.map((s) => [s.host, s.result]).sort()).toEqual([
      ['10.0.0.11', 'ok'],
      ['10.0.0.12', 'ok'],
    ]);
    for (const n of [1, 2]) {
      expect(sink.text).toContain(`"msg": "10.0.0.1${n} port=8085 host=10.0.0.1${n} user=ansible become=True name=node${n} groups=hello_world"`);
    }
  }, 120_000);
});
