import type { ClusterStatusPoint } from '@carapace/models';
import { describe, expect, it } from 'vitest';
import { CHART, chartGeometry } from './capacityChart.ts';

const TIB = 1024 ** 4;
const NOW = 1_800_000_000;

function point(minutesAgo: number, used: number, health: ClusterStatusPoint['health'] = 'HEALTH_OK', total = 4 * TIB): ClusterStatusPoint {
  return { at: NOW - minutesAgo * 60, health, raw_total_bytes: total, raw_used_bytes: used, osds_up: 3, osds_in: 3, osds_total: 3 };
}

describe('the capacity chart of a cluster page', () => {
  it('lays the last 24 hours out left to right and 0..the largest raw total bottom to top', () => {
    const g = chartGeometry([point(24 * 60, 0), point(12 * 60, 2 * TIB), point(0, 4 * TIB)], NOW);
    expect(g.max).toBe(4 * TIB);
    const bottom = CHART.height - CHART.bottom;
    const right = CHART.width - CHART.right;
    // Three points evenly spaced: one closed area from the first to the last.
    expect(g.usedArea.match(/M/g)).toHaveLength(1);
    expect(g.usedArea).toMatch(new RegExp(`^M${CHART.left},${bottom} L\\S+ L${right},${CHART.top} L${right},${bottom} L${CHART.left},${bottom} Z$`));
    expect(g.totalLine).toBe(`M${CHART.left},${CHART.top} L${(CHART.left + right) / 2},${CHART.top} L${right},${CHART.top}`);
    expect(g.yTicks.map((t) => t.value)).toEqual([0, TIB, 2 * TIB, 3 * TIB, 4 * TIB]);
    expect(g.yTicks[0]?.y).toBe(bottom);
    expect(g.yTicks.at(-1)?.y).toBe(CHART.top);
    // A tick every 4 hours over 24 hours.
    expect(g.xTicks.length).toBeGreaterThanOrEqual(6);
    expect(g.xTicks.every((t, i, all) => i === 0 || t.at - (all[i - 1]?.at ?? 0) === 4 * 3600)).toBe(true);
    expect(g.xTicks.every((t) => t.x >= CHART.left && t.x <= right)).toBe(true);
  });

  it('joins points a minute apart into one line, and breaks it where collection stopped', () => {
    const run = [point(30, TIB), point(29, TIB), point(28, 1.5 * TIB), point(10, 2 * TIB), point(9, 2 * TIB)];
    const g = chartGeometry(run, NOW);
    expect(g.totalLine.match(/M/g)).toHaveLength(2);
    expect(g.totalLine.match(/L/g)).toHaveLength(3);
    expect(g.usedArea.match(/Z/g)).toHaveLength(2);
  });

  it('draws the health of each point in the strip, unreachable points without capacity', () => {
    const g = chartGeometry([point(3, TIB), point(2, TIB, 'HEALTH_WARN'), point(1, 0, 'UNREACHABLE', 0), point(0, TIB, 'HEALTH_ERR')], NOW);
    expect(g.health.map((s) => s.health)).toEqual(['HEALTH_OK', 'HEALTH_WARN', 'UNREACHABLE', 'HEALTH_ERR']);
    expect(g.health.every((s) => s.width >= 1)).toBe(true);
    // The unreachable point (total 0) is not drawn as an empty cluster: the line has the other three.
    expect(g.totalLine.match(/[ML]/g)).toHaveLength(3);
    expect(g.health[1]?.x).toBeGreaterThan(g.health[0]?.x ?? Infinity);
  });

  it('points ten minutes apart are one line: a gap is three times the usual spacing', () => {
    const every10 = Array.from({ length: 12 }, (_, i) => point(110 - i * 10, TIB));
    expect(chartGeometry(every10, NOW).totalLine.match(/M/g)).toHaveLength(1);
    const withHole = [...every10.slice(0, 4), ...every10.slice(8)];
    expect(chartGeometry(withHole, NOW).totalLine.match(/M/g)).toHaveLength(2);
  });

  it('without points: nothing drawn, an axis of 1 byte, no health', () => {
    const g = chartGeometry([point(25 * 60, TIB)], NOW);
    expect(g.usedArea).toBe('');
    expect(g.totalLine).toBe('');
    expect(g.health).toEqual([]);
    expect(g.max).toBe(1);
    expect(g.from).toBe(NOW - 24 * 3600);
  });
});
