import { describe, expect, it } from 'vitest';
import { LogBuffer, NO_SEARCH, cleanLine, searchMore, splitMatches } from './logBuffer.ts';

describe('LogBuffer', () => {
  it('splits chunks into lines, across chunk boundaries', () => {
    const buffer = new LogBuffer();
    buffer.append('PLAY [all]\nTASK [ping');
    expect(buffer.lineCount).toBe(2);
    expect(buffer.line(1)).toBe('TASK [ping');
    buffer.append('] ***\nok: [host]\n');
    expect(buffer.lineCount).toBe(3);
    expect([0, 1, 2].map((i) => buffer.line(i))).toEqual(['PLAY [all]', 'TASK [ping] ***', 'ok: [host]']);
    expect(buffer.text()).toBe('PLAY [all]\nTASK [ping] ***\nok: [host]\n');
    expect(buffer.length).toBe('PLAY [all]\nTASK [ping] ***\nok: [host]\n'.length);
  });

  it('cleans colours and carriage returns', () => {
    expect(cleanLine('\u001b[0;32mok: [h]\u001b[0m\r')).toBe('ok: [h]');
  });

  it('keeps 200,000 lines and searches them quickly', () => {
    const buffer = new LogBuffer();
    const started = performance.now();
    for (let chunk = 0; chunk < 2000; chunk++) {
      let text = '';
      for (let i = 0; i < 100; i++) text += `line ${chunk * 100 + i} TASK [role : something] changed: [10.0.0.${i}]\n`;
      buffer.append(text);
    }
    expect(buffer.lineCount).toBe(200_000);
    expect(buffer.line(199_999)).toContain('line 199999 ');
    const hits = buffer.search('line 19999');
    expect(hits).toContain(19_999);
    expect(performance.now() - started).toBeLessThan(5000);
  });
});

describe('searchMore', () => {
  it('finds matches incrementally, also in a line that grows, without changing the last result', () => {
    const buffer = new LogBuffer();
    buffer.append('alpha\nbeta\nfail');
    const first = searchMore(NO_SEARCH, buffer, 'fail');
    expect(first.matches).toEqual([2]);
    buffer.append('ed\nok\nFAILED again\n');
    const second = searchMore(first, buffer, 'fail');
    expect(second.matches).toEqual([2, 4]);
    expect(first.matches).toEqual([2]);
    expect(searchMore(second, buffer, 'ok').matches).toEqual([3]);
    expect(searchMore(second, buffer, '')).toBe(NO_SEARCH);
  });

  it('starts over when the buffer was cleared', () => {
    const buffer = new LogBuffer();
    buffer.append('fail\nfail\nfail\n');
    const before = searchMore(NO_SEARCH, buffer, 'fail');
    buffer.clear();
    buffer.append('ok\nfail\nok\nok\n');
    expect(searchMore(before, buffer, 'fail').matches).toEqual([1]);
  });
});

describe('splitMatches', () => {
  it('splits around case-insensitive matches', () => {
    expect(splitMatches('Fatal: fatal', 'FATAL')).toEqual([
      { text: 'Fatal', match: true },
      { text: ': ', match: false },
      { text: 'fatal', match: true },
    ]);
    expect(splitMatches('abc', '')).toEqual([{ text: 'abc', match: false }]);
  });
});
