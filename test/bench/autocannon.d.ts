/**
 * The part of autocannon 9's programmatic API the API benchmark uses (the package ships no
 * types and `@types/autocannon` is not installed). A script file (no top-level import), so
 * that this is an ambient module declaration.
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    /** Seconds. */
    duration?: number;
    /** Seconds before a request counts as timed out. */
    timeout?: number;
    method?: string;
    headers?: Record<string, string>;
    /** The request body. */
    body?: string;
    title?: string;
    /** Milliseconds between the req/s samples. */
    sampleInt?: number;
    /** Requests per second across all connections (unlimited when absent). */
    overallRate?: number;
  }

  /** A percentile summary: `average`, `stddev`, `min`, `max`, `p50`, `p99`, … */
  export interface Histogram {
    readonly average: number;
    readonly mean: number;
    readonly stddev: number;
    readonly min: number;
    readonly max: number;
    readonly total: number;
    readonly p50: number;
    readonly p90: number;
    readonly p99: number;
  }

  export interface Result {
    readonly title?: string;
    readonly url: string;
    readonly connections: number;
    readonly pipelining: number;
    /** Seconds. */
    readonly duration: number;
    readonly errors: number;
    readonly timeouts: number;
    readonly mismatches: number;
    readonly non2xx: number;
    readonly resets: number;
    readonly '2xx': number;
    readonly statusCodeStats: Record<string, { count: number }>;
    /** Milliseconds (whole milliseconds: autocannon's histogram has a resolution of 1 ms). */
    readonly latency: Histogram;
    /** Requests per second, sampled every `sampleInt`; `total` is the number completed. */
    readonly requests: Histogram & { readonly sent: number };
    readonly throughput: Histogram;
  }

  /** A running benchmark: `response` gives the status, body size and response time (ms) of each response. */
  export interface Instance extends EventEmitter {
    on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): this;
    on(event: 'reqError', listener: (error: Error) => void): this;
    on(event: string, listener: (...args: unknown[]) => void): this;
    stop(): void;
  }

  /** Runs a benchmark; the callback gets its result (CommonJS `module.exports`, the default export from ESM). */
  export default function autocannon(options: Options, callback: (error: Error | null, result: Result) => void): Instance;
}
