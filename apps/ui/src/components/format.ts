/** Bytes in binary units: `4.0 TiB`, `512 MiB`. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(value >= 100 ? 0 : 1)} ${units[unit]}`;
}

/** A Unix time (seconds) as local date and time, or `—`. */
export function formatTime(unixSeconds: number | null | undefined): string {
  if (!unixSeconds) return '—';
  return new Date(unixSeconds * 1000).toLocaleString();
}

/** A Unix time (seconds) relative to now: `5 min ago`, `in 3 h`, `just now`. */
export function formatAgo(unixSeconds: number | null | undefined, now = Date.now()): string {
  if (!unixSeconds) return '—';
  const diff = Math.round(now / 1000 - unixSeconds);
  const abs = Math.abs(diff);
  if (abs < 10) return 'just now';
  const [value, unit] =
    abs < 60 ? [abs, 's'] : abs < 3600 ? [Math.round(abs / 60), 'min'] : abs < 86400 ? [Math.round(abs / 3600), 'h'] : [Math.round(abs / 86400), 'd'];
  return diff >= 0 ? `${value} ${unit} ago` : `in ${value} ${unit}`;
}

/** A duration in seconds: `42 s`, `3 min 5 s`, `2 h 10 min`. */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return '—';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** Escapes text for a regular expression (RE2 syntax, as the API's `regexp` filter takes). */
export function escapeRegexp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
