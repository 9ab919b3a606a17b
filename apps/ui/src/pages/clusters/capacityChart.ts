/** The geometry of the capacity chart of a cluster page: pure, so that it is tested without a browser. */
import type { ClusterStatusPoint } from '@carapace/models';

/** The drawing's size, in SVG user units (the SVG scales to its container). */
export const CHART = { width: 720, height: 220, left: 64, right: 12, top: 12, bottom: 44, strip: 10 } as const;

/** A segment of the health strip under the chart: from `x` over `width`, in the point's health. */
export interface HealthSegment {
  x: number;
  width: number;
  health: ClusterStatusPoint['health'];
  at: number;
}

export interface ChartGeometry {
  /** The SVG path of the raw space used (an area closed on the time axis), empty without points. */
  usedArea: string;
  /** The SVG path of the raw total (a line), empty without points. */
  totalLine: string;
  /** The top of the value axis, bytes (the largest raw total, at least 1). */
  max: number;
  /** Ticks of the value axis: bytes and their y. */
  yTicks: { value: number; y: number }[];
  /** Ticks of the time axis: Unix seconds and their x. */
  xTicks: { at: number; x: number }[];
  /** The health strip: one segment per point, to the next point (the last to now, at most two minutes). */
  health: HealthSegment[];
  /** The first and last time of the axis. */
  from: number;
  to: number;
}

const round = (n: number) => Math.round(n * 10) / 10;

/** The median time between two points, seconds (0 with fewer than two). */
function medianStep(points: readonly ClusterStatusPoint[]): number {
  const steps = points
    .slice(1)
    .map((p, i) => p.at - (points[i]?.at ?? p.at))
    .sort((a, b) => a - b);
  return steps[Math.floor(steps.length / 2)] ?? 0;
}

/**
 * Lays out `points` (oldest first) on a time axis of the `hours` before `now` (Unix seconds)
 * and a value axis from 0 to the largest raw total. A gap between two points of more than
 * `gapSeconds` and more than three times their usual spacing (no collection then) breaks
 * the lines.
 */
export function chartGeometry(points: readonly ClusterStatusPoint[], now: number, hours = 24, minGapSeconds = 300): ChartGeometry {
  const from = now - hours * 3600;
  const to = now;
  const inner = { x0: CHART.left, x1: CHART.width - CHART.right, y0: CHART.top, y1: CHART.height - CHART.bottom };
  const shown = points.filter((p) => p.at >= from && p.at <= to);
  const gapSeconds = Math.max(minGapSeconds, 3 * medianStep(shown));
  const max = Math.max(1, ...shown.map((p) => p.raw_total_bytes), ...shown.map((p) => p.raw_used_bytes));
  const x = (at: number) => round(inner.x0 + ((at - from) / (to - from)) * (inner.x1 - inner.x0));
  const y = (value: number) => round(inner.y1 - (value / max) * (inner.y1 - inner.y0));

  // Runs of points without a gap: each is one piece of the area and of the line.
  const runs: ClusterStatusPoint[][] = [];
  for (const p of shown) {
    const run = runs.at(-1);
    const last = run?.at(-1);
    if (run && last && p.at - last.at <= gapSeconds) run.push(p);
    else runs.push([p]);
  }
  const measured = (p: ClusterStatusPoint) => p.health !== 'UNREACHABLE' && p.raw_total_bytes > 0;
  const usedArea = runs
    .map((run) => run.filter(measured))
    .filter((run) => run.length > 0)
    .map((run) => {
      const first = run[0] as ClusterStatusPoint;
      const last = run.at(-1) as ClusterStatusPoint;
      const top = run.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.at)},${y(p.raw_used_bytes)}`).join(' ');
      return `${top} L${x(last.at)},${y(0)} L${x(first.at)},${y(0)} Z`;
    })
    .join(' ');
  const totalLine = runs
    .map((run) => run.filter(measured))
    .filter((run) => run.length > 0)
    .map((run) => run.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.at)},${y(p.raw_total_bytes)}`).join(' '))
    .join(' ');

  const yTicks = [0, 0.25, 0.5, 0.75, 1].map((f) => ({ value: max * f, y: y(max * f) }));
  const step = hours <= 6 ? 3600 : hours <= 12 ? 2 * 3600 : 4 * 3600;
  const xTicks: { at: number; x: number }[] = [];
  for (let at = Math.ceil(from / step) * step; at <= to; at += step) xTicks.push({ at, x: x(at) });

  const health: HealthSegment[] = shown.map((p, i) => {
    const next = shown[i + 1];
    const end = Math.min(next ? next.at : to, p.at + Math.max(gapSeconds, 120));
    return { x: x(p.at), width: Math.max(1, round(x(Math.min(end, to)) - x(p.at))), health: p.health, at: p.at };
  });
  return { usedArea, totalLine, max, yTicks, xTicks, health, from, to };
}
