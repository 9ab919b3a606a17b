// The runner's Prometheus metrics and the HTTP endpoint that serves them.
export { RunnerMetrics, type RunnerMetricsOptions } from './runner-metrics.js';
export { METRICS_PATH, startMetricsServer, type MetricsServer } from './metrics-server.js';
