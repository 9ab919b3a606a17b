/**
 * The samples of a Prometheus text exposition, by series (`name` or `name{label="value",...}`
 * as written). Comment lines (`# HELP`, `# TYPE`) are left out.
 */
export function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    samples.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return samples;
}

/** GETs a metrics endpoint and parses what it answers (which must be 200). */
export async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return parseExposition(await res.text());
}
