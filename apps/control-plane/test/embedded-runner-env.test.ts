import { describe, expect, it } from 'vitest';
import { runnerEnvironment } from '../src/embedded-runner.js';

describe('the embedded runner environment', () => {
  it("keeps the runner's own settings and the system's, never the control plane's secrets", () => {
    const env = runnerEnvironment({
      PATH: '/usr/bin',
      HOME: '/root',
      ANSIBLE_FORCE_COLOR: '0',
      CARAPACE_RUNNER_SLOTS: '4',
      CARAPACE_RUNNER_LABELS: 'site=lab',
      CARAPACE_DATABASE_URL: 'postgres://carapace:secret@db/carapace',
      CARAPACE_ADMIN_PASSWORD: 'admin-secret',
      CARAPACE_SMTP_PASSWORD: 'smtp-secret',
      CARAPACE_METRICS_TOKEN: 'metrics-secret-0123',
      CARAPACE_RUNNER: 'embedded',
    });
    expect(env).toEqual({ PATH: '/usr/bin', HOME: '/root', ANSIBLE_FORCE_COLOR: '0', CARAPACE_RUNNER_SLOTS: '4', CARAPACE_RUNNER_LABELS: 'site=lab' });
    expect(JSON.stringify(env)).not.toMatch(/secret/);
  });
});
