import type { Execution, ExecutionPreview, ExecutionStep } from '@carapace/models';
import { segment } from './core.client.js';
import { ServiceApiError, ServiceError } from './errors.js';
import { InfrastructureClient } from './infrastructure.client.js';
import type { RequestOptions } from './transport.js';
import { listQuery, type IterParams, type ListParams, type Page } from './types.js';

/** The states in which an execution is over. */
export const FINAL_EXECUTION_STATES: readonly string[] = ['completed', 'failed', 'canceled'];

/** Whether an execution in `state` is over (completed, failed or canceled). */
export function isFinalExecutionState(state: string): boolean {
  return FINAL_EXECUTION_STATES.includes(state);
}

/** Options of {@link ExecutionClient.followExecutionLog}. */
export interface FollowOptions extends RequestOptions {
  /** How many times in a row a broken stream is opened again before the error is raised. Default 5. */
  maxReconnects?: number;
}

/** Options of {@link ExecutionClient.watchExecution} and {@link ExecutionClient.waitForExecution}. */
export interface WatchOptions extends RequestOptions {
  /** Milliseconds between two looks at the execution. Default 1000. */
  intervalMs?: number;
}

/** What {@link ExecutionClient.watchExecution} yields each time something changed. */
export interface ExecutionProgress {
  /** The execution as it is now. */
  readonly execution: Execution;
  /** Every step so far, in the order of the API (by finish time). Empty without `view_execution_steps`. */
  readonly steps: readonly ExecutionStep[];
  /** The steps that are new since the last progress. */
  readonly newSteps: readonly ExecutionStep[];
  /** Whether the execution is over: this is the last progress. */
  readonly final: boolean;
}

/** Waits `ms` milliseconds, or rejects with a {@link ServiceError} when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | null | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new ServiceError('aborted', { cause: signal.reason }));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ServiceError('aborted', { cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Capped exponential backoff with equal jitter: half of the step, plus up to the other half. */
function backoffMs(attempt: number): number {
  const step = Math.min(10_000, 500 * 2 ** attempt);
  return step / 2 + Math.random() * (step / 2);
}

/** The calls on executions, their steps and their log, and helpers to follow them. Part of {@link Client}. */
export class ExecutionClient extends InfrastructureClient {
  /** A page of the latest executions, newest first (`GET /v1/execution/`; `view_execution`). */
  getExecutions(params?: ListParams, options?: RequestOptions): Promise<Page<Execution>> {
    return this.list('/v1/execution/', params, options);
  }

  /** Every execution matching `params`, fetched page by page as the loop goes. */
  iterExecutions(params?: IterParams, options?: RequestOptions): AsyncGenerator<Execution, void, undefined> {
    return this.iterate('/v1/execution/', params, options);
  }

  /** The latest version of an execution (`GET /v1/execution/{id}/`). */
  getExecution(executionId: string, options?: RequestOptions): Promise<Execution> {
    return this.call('GET', `/v1/execution/${segment(executionId)}/`, { options });
  }

  /** The versions of an execution, one per state change, newest first (`view_execution_version`). */
  getExecutionVersions(executionId: string, params?: ListParams, options?: RequestOptions): Promise<Page<Execution>> {
    return this.list(`/v1/execution/${segment(executionId)}/version/`, params, options);
  }

  /** One version of an execution (`GET /v1/execution/{id}/version/{version}/`). */
  getExecutionVersion(executionId: string, version: number, options?: RequestOptions): Promise<Execution> {
    return this.call('GET', `/v1/execution/${segment(executionId)}/version/${segment(version)}/`, { options });
  }

  /**
   * Runs a playbook configuration at one of its versions (`POST /v1/execution/`;
   * `create_execution` and the playbook's permission). The execution is queued (`created`).
   */
  createExecution(playbookConfigurationId: string, playbookConfigurationVersion: number, options?: RequestOptions): Promise<Execution> {
    return this.call('POST', '/v1/execution/', {
      body: { playbook_configuration_id: playbookConfigurationId, playbook_configuration_version: playbookConfigurationVersion },
      options,
    });
  }

  /**
   * Carapace extension: previews a playbook configuration at one of its versions
   * (`POST /v1/execution/` with `preview: true`; the permissions of `createExecution`): the
   * playbook runs in Ansible's check mode with diffs and changes nothing. Its result is
   * {@link ExecutionClient.getExecutionPreview}.
   */
  createPreview(playbookConfigurationId: string, playbookConfigurationVersion: number, options?: RequestOptions): Promise<Execution> {
    return this.call('POST', '/v1/execution/', {
      body: { playbook_configuration_id: playbookConfigurationId, playbook_configuration_version: playbookConfigurationVersion, preview: true },
      options,
    });
  }

  /** Carapace extension: a page of the previews, newest first (`GET /v1/execution/?preview=true`). */
  getPreviews(params?: ListParams, options?: RequestOptions): Promise<Page<Execution>> {
    return this.call('GET', '/v1/execution/', { query: { ...listQuery(params), preview: 'true' }, options });
  }

  /**
   * Carapace extension: what a preview found, per host and task: would change (with the
   * diff), unchanged, would fail, unknown (`GET /v1/execution/{id}/preview/`;
   * `view_execution_steps`). 404 for an execution that is not a preview.
   */
  getExecutionPreview(executionId: string, options?: RequestOptions): Promise<ExecutionPreview> {
    return this.call('GET', `/v1/execution/${segment(executionId)}/preview/`, { options });
  }

  /**
   * Carapace extension: relaunches a finished execution as a new one of the same
   * configuration version (`POST /v1/execution/{id}/relaunch/`; the permissions of
   * `createExecution`). `hosts: 'failed'` runs only on the hosts that failed or were
   * unreachable (the execution must be failed or canceled), unless the playbook does not
   * allow a subset: then `data.relaunch.whole` is true and `data.relaunch.note` says why.
   */
  relaunchExecution(executionId: string, hosts: 'failed' | 'all' = 'all', options?: RequestOptions): Promise<Execution> {
    return this.call('POST', `/v1/execution/${segment(executionId)}/relaunch/`, { body: { hosts }, options });
  }

  /**
   * Cancels an execution (`DELETE /v1/execution/{id}/`; `delete_execution`): a queued one is
   * `canceled` at once, a running one `canceling` until its runner has stopped it.
   */
  cancelExecution(executionId: string, options?: RequestOptions): Promise<Execution> {
    return this.call('DELETE', `/v1/execution/${segment(executionId)}/`, { options });
  }

  /** A page of the steps of an execution, by finish time (`GET /v1/execution/{id}/steps/`; `view_execution_steps`). */
  getExecutionSteps(executionId: string, params?: ListParams, options?: RequestOptions): Promise<Page<ExecutionStep>> {
    return this.list(`/v1/execution/${segment(executionId)}/steps/`, params, options);
  }

  /** Every step of an execution, fetched page by page as the loop goes. */
  iterExecutionSteps(executionId: string, params?: IterParams, options?: RequestOptions): AsyncGenerator<ExecutionStep, void, undefined> {
    return this.iterate(`/v1/execution/${segment(executionId)}/steps/`, params, options);
  }

  /**
   * The Ansible log of an execution as text, as far as it goes now
   * (`GET /v1/execution/{id}/log/`; `view_execution_steps`). Readable while the execution runs.
   */
  getExecutionLog(executionId: string, options?: RequestOptions): Promise<string> {
    return this.transport.text({ method: 'GET', path: `/v1/execution/${segment(executionId)}/log/`, auth: this.auth, options });
  }

  /**
   * Follows the log of an execution as it grows (`?follow=yes`): yields the text from the
   * start, chunk by chunk, and ends when the execution is over and its log complete. A
   * stream that breaks is opened again (skipping what was already yielded). Breaking out
   * of the loop closes the stream. The `timeout` covers only the wait for each answer.
   *
   * @example
   * ```ts
   * for await (const text of client.followExecutionLog(id)) process.stdout.write(text);
   * ```
   */
  async *followExecutionLog(executionId: string, options: FollowOptions = {}): AsyncGenerator<string, void, undefined> {
    const { maxReconnects = 5, ...request } = options;
    const path = `/v1/execution/${segment(executionId)}/log/`;
    let seen = 0;
    let failures = 0;
    for (;;) {
      let opened;
      try {
        opened = await this.transport.stream({ method: 'GET', path, query: { follow: 'yes' }, auth: this.auth, options: request });
      } catch (err) {
        if (err instanceof ServiceApiError || request.signal?.aborted || failures >= maxReconnects) throw err;
        await sleep(backoffMs(failures++), request.signal);
        continue;
      }
      const { response, done, wrap } = opened;
      const reader = (response.body as ReadableStream<Uint8Array> | null)?.getReader();
      const decoder = new TextDecoder();
      let received = 0;
      let ended = false;
      try {
        for (;;) {
          const chunk = reader ? await reader.read() : { done: true as const, value: undefined };
          const text = chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
          const fresh = text.slice(Math.max(0, seen - received));
          received += text.length;
          if (fresh) {
            seen += fresh.length;
            failures = 0;
            yield fresh;
          }
          if (chunk.done) break;
        }
        ended = true;
      } catch (err) {
        if (request.signal?.aborted || failures >= maxReconnects) throw wrap(err);
      } finally {
        done();
        if (!ended) await reader?.cancel().catch(() => undefined);
      }
      if (ended) {
        // The server ends the stream once the execution is over; anything else was a restart.
        const execution = await this.getExecution(executionId, request);
        if (isFinalExecutionState(execution.data.state)) return;
        if (failures >= maxReconnects) throw new ServiceError(`the log of execution ${executionId} ended before the execution did`);
      }
      await sleep(backoffMs(failures++), request.signal);
    }
  }

  /**
   * Watches an execution until it is over: looks at it and its steps every `intervalMs`,
   * and yields an {@link ExecutionProgress} at the first look and whenever the execution or
   * its steps changed. The last progress has `final: true`.
   */
  async *watchExecution(executionId: string, options: WatchOptions = {}): AsyncGenerator<ExecutionProgress, void, undefined> {
    const { intervalMs = 1000, ...request } = options;
    const seen = new Set<string>();
    let lastVersion = 0;
    let canSeeSteps = true;
    for (;;) {
      const execution = await this.getExecution(executionId, request);
      let steps: ExecutionStep[] = [];
      if (canSeeSteps) {
        try {
          steps = (await this.getExecutionSteps(executionId, { all: true }, request)).items;
        } catch (err) {
          if (!(err instanceof ServiceApiError && err.code === 403)) throw err;
          canSeeSteps = false;
        }
      }
      const newSteps = steps.filter((step) => !seen.has(step.id));
      for (const step of newSteps) seen.add(step.id);
      const final = isFinalExecutionState(execution.data.state);
      if (execution.version !== lastVersion || newSteps.length > 0) yield { execution, steps, newSteps, final };
      lastVersion = execution.version;
      if (final) return;
      await sleep(intervalMs, request.signal);
    }
  }

  /** Waits until an execution is over (see {@link ExecutionClient.watchExecution}); returns it as it ended. */
  async waitForExecution(executionId: string, options: WatchOptions = {}): Promise<Execution> {
    let last: Execution | undefined;
    for await (const progress of this.watchExecution(executionId, options)) last = progress.execution;
    if (!last) throw new ServiceError(`execution ${executionId} was not seen`);
    return last;
  }
}
