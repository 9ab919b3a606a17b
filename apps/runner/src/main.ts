import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileRunRecords, type AgentPorts } from './agent/index.js';
import { loadRunnerConfig, RunnerConfigError, type RunnerConfig } from './config.js';
import { enroll } from './enroll.js';
import { startAnsibleRun } from './executor/index.js';
import { ensureKeyPair } from './key-file.js';
import { createRunnerLogger } from './logger.js';
import { STATUS_LIMITS } from '@carapace/protocol';
import { collectStatus, gatherFacts, preflight } from './ssh/index.js';
import { startRunner, type StartedRunner } from './start-runner.js';

const USAGE = `Usage: carapace-runner [--config FILE] [--exit-with-stdin]
       carapace-runner enroll --url HOST:PORT --token TOKEN [options]   (see carapace-runner enroll --help)

Connects to the Carapace control plane over gRPC and runs the executions it is given with
ansible-playbook. Configuration: the YAML file (--config or CARAPACE_RUNNER_CONFIG),
overridden by CARAPACE_RUNNER_* environment variables; see apps/runner/README.md.
--exit-with-stdin drains and stops when standard input closes (a supervisor's lifeline:
the control plane starts its embedded runner so).`;

/** The real side effects: ansible-playbook, ssh2, and the run records in `<workDir>/executions`. */
export function realPorts(config: RunnerConfig): AgentPorts {
  const privateKey = readFileSync(config.sshKeyFile);
  return {
    startRun: (request, sink) =>
      startAnsibleRun(
        {
          executionId: request.executionId,
          playbookId: request.playbookId,
          configuration: request.configuration,
          privateKeyPath: config.sshKeyFile,
          workRoot: request.workRoot,
          ansiblePlaybookPath: config.ansiblePlaybook,
          knownHostsFile: request.knownHostsFile,
          allowLocalConnection: config.allowLocalConnection,
          checkMode: request.checkMode === true,
          limit: request.limit ?? [],
        },
        sink,
        { graceMs: { interrupt: config.cancelGraceMs, terminate: config.cancelGraceMs } },
      ),
    preflight: (targets) => preflight(targets, { privateKey, timeoutMs: config.sshTimeoutMs }),
    gatherFacts: (target) => gatherFacts(target, { privateKey, timeoutMs: config.sshTimeoutMs }),
    collectStatus: async (request) =>
      collectStatus(request.monitors, {
        privateKey,
        timeoutMs: config.sshTimeoutMs,
        cephCluster: request.cephCluster,
        connectTimeoutS: request.connectTimeoutS,
        maxOutputBytes: STATUS_LIMITS.maxOutputBytes,
      }),
    records: fileRunRecords(join(config.workDir, 'executions')),
  };
}

/**
 * Starts the runner and runs until SIGTERM or SIGINT (drain), or a second signal (stop);
 * returns the exit status: 0 stopped, 2 bad usage or configuration.
 */
export async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'enroll') return enroll(argv.slice(1), { env: process.env, stdout: process.stdout, stderr: process.stderr });
  let args;
  try {
    args = parseArgs({
      args: argv,
      options: { config: { type: 'string', short: 'c' }, 'exit-with-stdin': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args.values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let config;
  let key;
  try {
    config = loadRunnerConfig({ file: args.values.config, env: process.env });
    key = ensureKeyPair(config.sshKeyFile);
  } catch (e) {
    if (e instanceof RunnerConfigError) {
      process.stderr.write(`carapace-runner: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const log = createRunnerLogger(config);
  if (key.repaired) log.warn({ sshKeyFile: config.sshKeyFile, publicKey: key.publicKey }, key.repaired);
  mkdirSync(config.workDir, { recursive: true, mode: 0o700 });
  let started: StartedRunner;
  try {
    started = await startRunner(config, { ports: realPorts(config), log, sshPublicKey: key.publicKey });
  } catch (e) {
    if (e instanceof RunnerConfigError) {
      process.stderr.write(`carapace-runner: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const { agent } = started;
  // Checked beside the connection, not before it: Python takes a second or more to answer.
  execFile(config.ansiblePlaybook, ['--version'], { encoding: 'utf8', timeout: 30_000 }, (error, stdout, stderr) => {
    if (error) {
      // Facts still work over ssh2; every execution would fail with this reason.
      log.error(
        { ansiblePlaybook: config.ansiblePlaybook, why: stderr.trim() || error.message },
        'ansible-playbook cannot run here: executions will fail until it is installed (Debian: apt-get install ansible-core openssh-client)',
      );
    } else {
      log.info({ ansible: stdout.split('\n')[0] }, 'ansible-playbook found');
    }
  });
  let signals = 0;
  const onSignal = (signal: string) => {
    signals += 1;
    if (signals > 1) {
      log.warn({ signal }, 'second signal: stopping at once');
      agent.stop();
      return;
    }
    log.info({ signal }, 'draining, then stopping');
    void agent.drain(`runner got ${signal}`);
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  const lifeline = args.values['exit-with-stdin'] ? process.stdin : null;
  const onLifelineClosed = () => onSignal('stdin closed');
  if (lifeline) {
    // The write end closes when the supervisor ends, however it ends (SIGKILL included).
    lifeline.on('error', () => undefined);
    lifeline.once('close', onLifelineClosed);
    lifeline.resume();
  }
  await agent.stopped;
  await started.metrics?.close();
  lifeline?.removeListener('close', onLifelineClosed).destroy();
  log.info('runner stopped');
  return 0;
}
