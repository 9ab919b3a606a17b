import type { RunArtifact } from './artifacts.js';
import type { StepEvent } from './events.schema.js';

/** What to run: one execution of a playbook configuration. */
export interface AnsibleRunSpec {
  /** Names the work dir (`<workRoot>/<executionId>`): a UUID or another plain file name. */
  readonly executionId: string;
  /** The playbook id; its content is `ansibleContentDir(playbookId)` of `@carapace/playbooks`. */
  readonly playbookId: string;
  /** The configuration version: `global_vars` become extra vars, `inventory` the inventory. */
  readonly configuration: {
    readonly global_vars: Record<string, unknown>;
    readonly inventory: Record<string, unknown>;
  };
  /**
   * A preview: `--check --diff`; the cleanup playbook is not run and no files are handed
   * back. The callback plugin adds its verdict to each step (`StepEvent.preview`).
   */
  readonly checkMode?: boolean;
  /** Inventory hosts to limit the run to (`--limit`); empty or absent: every host. */
  readonly limit?: readonly string[];
  /** The SSH private key of the runner (`--private-key`). */
  readonly privateKeyPath: string;
  /** The directory under which the work dir is created. */
  readonly workRoot: string;
  /**
   * known_hosts lines to start from, usually the host keys the pre-flight checked; copied
   * into the work dir. Without it the run starts from an empty known_hosts (new keys are
   * accepted, `StrictHostKeyChecking=accept-new`).
   */
  readonly knownHostsFile?: string;
  /** Added to the environment of ansible-playbook, last (it wins). */
  readonly extraEnv?: Readonly<Record<string, string>>;
  /** The ansible-playbook executable; `ansible-playbook` (from `PATH`) by default. */
  readonly ansiblePlaybookPath?: string;
  /**
   * Lets the configuration set `ansible_connection: local`, which runs its tasks on the
   * runner itself: for tests and labs only. Off by default: such a run is refused.
   */
  readonly allowLocalConnection?: boolean;
}

/**
 * Where a run's output goes, as it comes. Called synchronously from stream handlers: it
 * must not throw.
 */
export interface RunSink {
  /** One task on one host, from the callback plugin. */
  step(event: StepEvent): void;
  /** Ansible's output (stdout and stderr in arrival order) and the runner's own notes. */
  log(text: string): void;
  /** ansible-playbook started, in process group `pgid` (its pid). */
  started?(pgid: number): void;
}

/** How a run ended. */
export type RunOutcome = 'completed' | 'failed' | 'canceled';

/** The end of a run. */
export interface RunResult {
  readonly outcome: RunOutcome;
  /** The exit code of ansible-playbook; null when it did not start or died by a signal. */
  readonly exitCode: number | null;
  /** The signal that ended ansible-playbook, e.g. `SIGKILL`. */
  readonly signal: string | null;
  /** Why it failed or was canceled; null when completed. */
  readonly reason: string | null;
  /**
   * The files the run left in its artifacts directory (`carapace_artifacts_dir`), sorted by
   * name: present only when it completed and left some. Files beyond the bounds of
   * `collectArtifacts` fail the run instead.
   */
  readonly artifacts?: readonly RunArtifact[];
}

/** A run under way. */
export interface RunHandle {
  /**
   * Settles once ansible-playbook and every process of its group are gone and all their
   * output has reached the sink. Never rejects: a run that cannot start is `failed`.
   */
  readonly result: Promise<RunResult>;
  /**
   * Stops the run: SIGINT to the process group, SIGTERM after `graceMs.interrupt`, SIGKILL
   * after `graceMs.terminate` more. The run ends `canceled` (unless ansible-playbook still
   * exits 0). Idempotent; does nothing once the run is over.
   */
  cancel(reason?: string): void;
  /** The pid (and process group id) of ansible-playbook, once it has started. */
  readonly pid: number | undefined;
}

/** Tuning of a run; the defaults suit production. */
export interface AnsibleRunOptions {
  readonly graceMs?: {
    /** From SIGINT to SIGTERM; 10 000 by default. */
    readonly interrupt?: number;
    /** From SIGTERM to SIGKILL; 10 000 by default. */
    readonly terminate?: number;
  };
  /** Keep the work dir after the run (for debugging); removed by default. */
  readonly keepWorkDir?: boolean;
  /** The directory holding `playbook.yml`, instead of the playbook's own content (tests). */
  readonly contentDir?: string;
  /** The directory of the carapace callback plugin; the one shipped with the runner by default. */
  readonly callbackPluginDir?: string;
  /** At most this many hosts in parallel (Ansible forks); 20 by default. */
  readonly maxForks?: number;
  /**
   * The environment ansible-playbook starts from; `process.env` by default. Its `ANSIBLE_*`
   * and `CARAPACE_EVENTS_*` variables are dropped: the work dir's ansible.cfg decides.
   */
  readonly baseEnv?: Readonly<Record<string, string | undefined>>;
}
