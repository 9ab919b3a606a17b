import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backoffMs } from '../src/agent/index.js';
import { Outbox, type OutboxEvent } from '../src/outbox.js';

const dirs: string[] = [];
function spillDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'carapace-outbox-'));
  dirs.push(d);
  return join(d, 'outbox');
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const log = (id: string, text: string) => (seq: number): OutboxEvent => ({ log: { execution_id: id, seq, offset: 0, text } });
const result = (id: string) => (seq: number): OutboxEvent => ({ result: { execution_id: id, seq, outcome: 'completed', reason: '' } });
const seqs = (events: Iterable<OutboxEvent>) => [...events].map((e) => ('log' in e ? e.log?.seq : 'result' in e ? e.result?.seq : 'step' in e ? e.step?.seq : e.artifact?.seq));

describe('the outbox of unacknowledged events', () => {
  it('numbers events per execution from 1 and resends only what is not acknowledged, in order', () => {
    const box = new Outbox(spillDir(), 1 << 20);
    for (let i = 0; i < 5; i++) box.push('a', log('a', `line ${i}\n`));
    box.push('b', log('b', 'other\n'));
    expect(seqs(box.unacked())).toEqual([1, 2, 3, 4, 5, 1]);
    box.ack('a', 3);
    box.ack('a', 2); // a stale ack changes nothing
    expect(seqs(box.unacked())).toEqual([4, 5, 1]);
    expect(box.pending).toBe(3);
  });

  it('forgets an execution once its result is acknowledged, not before', () => {
    const box = new Outbox(spillDir(), 1 << 20);
    box.push('a', log('a', 'x'));
    box.push('a', result('a'));
    box.ack('a', 1);
    expect(box.has('a')).toBe(true);
    box.ack('a', 2);
    expect(box.has('a')).toBe(false);
    expect(box.bytesInMemory).toBe(0);
  });

  it('spills past its memory bound to disk, loses nothing, and removes the file once acknowledged', () => {
    const dir = spillDir();
    const box = new Outbox(dir, 2048);
    const texts = Array.from({ length: 50 }, (_, i) => `${String(i).padStart(3, '0')} ${'é'.repeat(100)}\n`);
    for (const t of texts) box.push('big', log('big', t));
    expect(box.bytesInMemory).toBeLessThanOrEqual(2048);
    expect(readdirSync(dir)).toEqual(['big.jsonl']);
    const all = [...box.unacked()].map((e) => ('log' in e ? e.log?.text : ''));
    expect(all).toEqual(texts);
    box.ack('big', 30);
    expect(seqs(box.unacked())).toEqual(Array.from({ length: 20 }, (_, i) => 31 + i));
    box.ack('big', 50);
    expect(readdirSync(dir)).toEqual([]);
    expect(box.pending).toBe(0);
  });

  it('drops an execution the control plane gave up', () => {
    const box = new Outbox(spillDir(), 10);
    box.push('gone', log('gone', 'more than ten characters'));
    box.drop('gone');
    expect([...box.unacked()]).toEqual([]);
    expect(box.pending).toBe(0);
  });

  it('resolves "drained" once every event is acknowledged or dropped, not before', async () => {
    const box = new Outbox(spillDir(), 1 << 20);
    await box.drained(); // nothing pending: at once
    box.push('a', log('a', 'x'));
    box.push('a', result('a'));
    box.push('b', log('b', 'y'));
    let drained = false;
    const waiting = box.drained().then(() => (drained = true));
    box.ack('a', 1);
    await Promise.resolve();
    expect(drained).toBe(false);
    box.ack('a', 2);
    await Promise.resolve();
    expect(drained).toBe(false);
    box.drop('b');
    await waiting;
    expect(drained).toBe(true);
  });
});

describe('reconnect backoff', () => {
  it('grows exponentially, is capped, and is jittered within the upper half', () => {
    expect(backoffMs(0, 500, 30_000, () => 0)).toBe(250);
    expect(backoffMs(0, 500, 30_000, () => 1)).toBe(500);
    expect(backoffMs(3, 500, 30_000, () => 1)).toBe(4000);
    expect(backoffMs(20, 500, 30_000, () => 1)).toBe(30_000);
    expect(backoffMs(20, 500, 30_000, () => 0)).toBe(15_000);
    const samples = new Set(Array.from({ length: 20 }, () => backoffMs(5, 500, 30_000)));
    expect(samples.size).toBeGreaterThan(1);
  });
});
