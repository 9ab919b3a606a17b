// bench:compare reads the reports of bench:api and bench:log as they print them: the parsers
// against reports in their printed shape (figures from this checkout's runs), and the table.
import { describe, expect, it } from 'vitest';
import { compareTable, median, parseApiSummary, parseLogReport } from './compare.js';

const API = `measurements:
round            endpoint  conns  req/s  p50 ms
-----  ------------------  -----  -----  ------
1         bare twin (get)     10  12229    0.73

summary (median of 3 rounds; the judged figure's range in brackets):
scenario                    conns  req/s  p50 ms  p99 ms  bare req/s  vs bare  µs/req  bare µs/req  CPU vs bare            target                result
--------------------------  -----  -----  ------  ------  ----------  -------  ------  -----------  -----------  ----------------  --------------------
GET /v1/user/{id}/             10   6065    1.54    4.50       12229    0.496     163           71        0.436       ratio ≥ 0.5  MISS [0.491 … 0.507]
GET /v1/server/?per_page=100    1    412    2.31    7.62        1290    0.319    2411          402        0.167  p99 < 30 ms @ 1c  PASS [7.1 … 7.9]

0 of 1 targets met; MISS: GET /v1/user/{id}/ (reported, not an error: exit status 0)
`;

const LOG = `
bench:log  200000 lines, 16.8 MiB of log in 537 chunks

| figure | value |
|---|---|
| lines/s reaching a follow client | 202,673 |
| baseline: bare Node HTTP stream of the same bytes | 580,241 lines/s |
| ratio to baseline | 0.349 |
| runner side: all chunks sent and stored in | 1234 ms |
`;

describe('bench:compare', () => {
  it("reads bench:api's summary: ratio, CPU per request and p99 of every scenario", () => {
    expect(parseApiSummary(API)).toEqual([
      { name: 'GET /v1/user/{id}/ vs bare', value: 0.496, higherIsBetter: true },
      { name: 'GET /v1/user/{id}/ µs/req', value: 163, higherIsBetter: false },
      { name: 'GET /v1/user/{id}/ p99 ms', value: 4.5, higherIsBetter: false },
      { name: 'GET /v1/server/?per_page=100 vs bare', value: 0.319, higherIsBetter: true },
      { name: 'GET /v1/server/?per_page=100 µs/req', value: 2411, higherIsBetter: false },
      { name: 'GET /v1/server/?per_page=100 p99 ms', value: 7.62, higherIsBetter: false },
    ]);
    expect(parseApiSummary('no summary here')).toEqual([]);
  });

  it("reads bench:log's follower rate and its ratio to the bare stream", () => {
    expect(parseLogReport(LOG)).toEqual([
      { name: 'log follow lines/s', value: 202673, higherIsBetter: true },
      { name: 'log follow vs bare stream', value: 0.349, higherIsBetter: true },
    ]);
    expect(parseLogReport('| ratio to baseline | x |')).toEqual([]);
  });

  it('prints medians side by side and the working tree ÷ the base', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    const table = compareTable(
      'main',
      new Map([['GET vs bare', [0.5, 0.6, 0.55]], ['only here', [1]]]),
      new Map([['GET vs bare', [0.5, 0.5, 0.4]]]),
      new Map([['GET vs bare', true]]),
    );
    expect(table.split('\n')).toEqual(['figure       working tree   main  ratio  better is', 'GET vs bare         0.550  0.500  1.100     higher']);
  });
});
