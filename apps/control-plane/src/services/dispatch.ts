import type { Assignment, ExecutionEngine } from './execution-engine.js';
import type { FactsRequest, FactsScheduler } from './facts.scheduler.js';
import type { RunnerSession } from './runner.service.js';

/** Something to send to a runner: an execution to run, or a server whose facts to gather. */
export type Dispatched =
  | { readonly kind: 'assignment'; readonly runner: string; readonly assignment: Assignment }
  | { readonly kind: 'facts'; readonly runner: string; readonly request: FactsRequest };

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
  ) {}

  /** Calls `listener` whenever new work may be waiting (executions queued, locks freed, facts asked for); returns its removal. */
  onWork(listener: () => void): () => void {
    const offs = [this.engine.workAvailable.on(listener), this.facts.requested.on(listener)];
    return () => {
      for (const off of offs) off();
    };
  }

  /** Claims queued executions and due fact requests for these runners; the result is to be sent in order. */
  async take(runners: readonly RunnerSession[]): Promise<Dispatched[]> {
    const ready = runners.filter((s) => !s.draining);
    // Least loaded first, so that work spreads over runners.
    const load = new Map<string, number>();
    for (const s of ready) load.set(s.name, (await this.engine.runningOn(s.name)).length);
    ready.sort((a, b) => (load.get(a.name) ?? 0) - (load.get(b.name) ?? 0));
    const out: Dispatched[] = [];
    for (const session of ready) {
      const free = session.slots - (load.get(session.name) ?? 0);
      if (free <= 0) continue;
      for (const assignment of await this.engine.claim(session.name, free)) out.push({ kind: 'assignment', runner: session.name, assignment });
    }
    for (const { runner, request } of await this.facts.take(ready.map((s) => ({ name: s.name, labels: s.labels })))) {
      out.push({ kind: 'facts', runner, request });
    }
    return out;
  }
}

