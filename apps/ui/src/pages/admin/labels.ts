/** Parses runner labels written one `key=value` a line (or separated by commas). */
export function parseLabels(text: string): { labels: Record<string, string> } | { error: string } {
  const labels: Record<string, string> = {};
  for (const raw of text.split(/[\n,]/)) {
    const item = raw.trim();
    if (!item) continue;
    const eq = item.indexOf('=');
    if (eq <= 0) return { error: `"${item}" is not key=value` };
    labels[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return { labels };
}

/** Runner names the API accepts. */
export const RUNNER_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/;
