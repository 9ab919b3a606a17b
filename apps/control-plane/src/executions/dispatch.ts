import type { ExecutionEngine } from './execution-engine.js';
import type { Assignment } from './execution.types.js';
import type { FactsRequest, FactsScheduler } from '../infrastructure/facts.scheduler.js';
import type { RunnerSession } from './runner.service.js';
import type { StatusRequest, StatusScheduler } from '../infrastructure/status.scheduler.js';

/** Something to send to a runner: an execution to run, or a server whose facts to gather. */
export type Dispatched =
  | { readonly kind: 'assignment'; readonly runner: string; readonly assignment: Assignment }
  | { readonly kind: 'facts'; readonly runner: string; readonly request: FactsRequest }
  | { readonly kind: 'status'; readonly runner: string; readonly request: StatusRequest };

/**
 * Hands work to connected runners against their free slots (ARCHITECTURE.md "Work is pulled
 * against capacity"). Dispatch decides which runner and how many: the least loaded runner
 * first, never a draining one, never more than its free slots. The engine's `claim` decides
 * which executions (oldest first, all servers locked at once); dispatch is its only caller
 * in the running control plane. What to send comes back as domain values: the transport
 * (the gRPC gateway) encodes and writes them.
 */
export class Dispatch {
  constructor(
    private readonly engine: ExecutionEngine,
    private readonly facts: FactsScheduler,
    private readonly status?: StatusScheduler,
  ) {}

  /** Calls `listener` whenever new work may be waiting (executions queued, locks freed, facts asked for); returns its removal. */
  onWork(listener: () => void): () => void {
    const offs = [this.engine.workAvailable.on(listener), this.facts.requested.on(listener)];
    if (this.status) offs.push(this.status.requested.on(listener));
    return () => {
      for (const off of offs) off();
    };
  }

  /** Claims queued executions and due fact requests for these runners; the result is to be sent in order. */
  async take(runners: readonly RunnerSession[]): Promise<Dispatched[]> {
    const ready = runners.filter((s) => !s.draining);
    // Least loaded first, so that work spreads over runners; one read of the queue for all.
    const load = new Map(ready.map((s) => [s.name, this.engine.loadOf(s.name)]));
    ready.sort((a, b) => (load.get(a.name) ?? 0) - (load.get(b.name) ?? 0));
    const out: Dispatched[] = [];
    const slots = ready.map((s) => [s.name, s.slots - (load.get(s.name) ?? 0)] as const);
    for (const { runner, assignment } of await this.engine.claimFor(slots)) out.push({ kind: 'assignment', runner, assignment });
    for (const { runner, request } of await this.facts.take(ready.map((s) => ({ name: s.name, labels: s.labels })))) {
      out.push({ kind: 'facts', runner, request });
    }
    return out;
  }

  /**
   * Claims due status collections for these runners (draining ones too: a collection is no
   * execution). Called by the transport after what `take` handed out is sent, so that it
   * never delays an execution.
   */
  async takeStatus(runners: readonly RunnerSession[]): Promise<Dispatched[]> {
    if (!this.status) return [];
    return (await this.status.take(runners.map((s) => ({ name: s.name, labels: s.labels })))).map(({ runner, request }) => ({ kind: 'status' as const, runner, request }));
  }
}

