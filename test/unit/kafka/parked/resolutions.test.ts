import { describe, expect, it } from 'vitest';
import type { ParkedEvent, ParkedKeyState } from '../../../../src/engine/parkedKeys.js';
import type { ParkedKeyView } from '../../../../src/kafka/parked/parkedChangelog.js';
import { progressOf } from '../../../../src/kafka/parked/resolutionClient.js';
import { matchResolution } from '../../../../src/kafka/parked/resolutionMatch.js';
import { controlRecord, parseControlRecord, resolutionsTopic, type ResolutionRequest } from '../../../../src/kafka/parked/resolutionRecords.js';

const target = { topic: 'disputes', partition: 1, lane: 'acct-02', effectId: 'disputes/1/12', parkedAtMs: 5_000 };
const state: ParkedKeyState = { lane: 'acct-02', key: 'acct-02', status: 'parked', headSeq: 0, nextSeq: 4, parkedAtMs: 5_000 };
const head = (effectId: string) => ({ event: { effectId } }) as unknown as ParkedEvent;

describe('matching a resolution to the key it names', () => {
  it('applies while the key is parked at the same head, parked at the same time', () => {
    expect(matchResolution(target, { state, head: head('disputes/1/12') })).toEqual({ kind: 'apply' });
  });

  it('is stale once the key is released', () => {
    const match = matchResolution(target, { state: undefined, head: undefined });
    expect(match).toMatchObject({ kind: 'stale', reason: expect.stringMatching(/key 'acct-02' of disputes\/1 is not parked/) });
  });

  it('is stale while the key replays after an earlier resolution (so a resolution applies once)', () => {
    const match = matchResolution(target, { state: { ...state, status: 'replaying', resolution: { retry: true } }, head: head('disputes/1/12') });
    expect(match).toMatchObject({ kind: 'stale', reason: expect.stringMatching(/already being replayed/) });
  });

  it('is stale when the key is parked at another event now', () => {
    const match = matchResolution(target, { state: { ...state, headSeq: 2 }, head: head('disputes/1/30') });
    expect(match).toMatchObject({ kind: 'stale', reason: expect.stringMatching(/parked at event disputes\/1\/30 now, not at disputes\/1\/12/) });
  });

  it('is stale when the key was parked again at the same event (a retry that failed again): an old request never applies twice', () => {
    const match = matchResolution(target, { state: { ...state, parkedAtMs: 9_000 }, head: head('disputes/1/12') });
    expect(match).toMatchObject({ kind: 'stale', reason: expect.stringMatching(/was parked again at/) });
  });
});

describe('control records on <group>-resolutions', () => {
  const request: ResolutionRequest = { type: 'resolve', id: 'r-1', target, resolution: { decision: { action: 'refund' } }, by: 'ann@host', atMs: 7 };

  it('names the topic after the group and keeps every record on partition 0', () => {
    expect(resolutionsTopic('disputes')).toBe('disputes-resolutions');
    const out = controlRecord('disputes', request);
    expect(out).toMatchObject({ topic: 'disputes-resolutions', key: 'r-1', partition: 0 });
  });

  it('reads back requests and outcomes as written', () => {
    expect(parseControlRecord(controlRecord('g', request).value)).toEqual(request);
    for (const resolution of [{ retry: true }, { discard: true }, { decision: null }] as const) {
      expect(parseControlRecord(controlRecord('g', { ...request, resolution }).value)).toMatchObject({ resolution });
    }
    const outcome = { type: 'outcome', id: 'r-1', status: 'refused', message: 'no', worker: '1', atMs: 8 } as const;
    expect(parseControlRecord(controlRecord('g', outcome).value)).toEqual(outcome);
  });

  it('refuses records that are not requests or outcomes, saying what is wrong', () => {
    const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
    expect(() => parseControlRecord(null)).toThrow(/no value/);
    expect(() => parseControlRecord(new TextEncoder().encode('{'))).toThrow();
    expect(() => parseControlRecord(bytes({ type: 'resolve' }))).toThrow(/not a JSON object with an id/);
    expect(() => parseControlRecord(bytes({ ...request, type: 'other' }))).toThrow(/unknown type "other"/);
    expect(() => parseControlRecord(bytes({ ...request, target: { ...target, partition: 'x' } }))).toThrow(/target needs/);
    expect(() => parseControlRecord(bytes({ ...request, resolution: { retry: false } }))).toThrow(
      'resolution r-1: a resolution must be exactly one of { decision: ... }, { retry: true } and { discard: true }; got { retry: false }; write { retry: true }',
    );
    expect(() => parseControlRecord(bytes({ type: 'outcome', id: 'x', status: 'done' }))).toThrow(/unknown status "done"/);
  });

  it.each([
    [{}, 'got {}'],
    [{ decision: { action: 'refund' }, discard: true }, "got 'decision' and 'discard' together"],
    [{ discard: 'yes' }, 'got { discard: "yes" }; write { discard: true }'],
    [{ discrad: true }, "got unknown field 'discrad'"],
    ['retry', 'got string'],
  ])('refuses a request whose resolution is not exactly one of decision, retry, discard: %j', (resolution, problem) => {
    const bytes = new TextEncoder().encode(JSON.stringify({ ...request, resolution }));
    expect(() => parseControlRecord(bytes)).toThrow(
      `resolution r-1: a resolution must be exactly one of { decision: ... }, { retry: true } and { discard: true }; ${problem}`,
    );
  });
});

describe('what the CLI reads of a key after sending a resolution', () => {
  const view = (over: Partial<ParkedKeyView>): ParkedKeyView => ({
    ...state,
    topic: 'disputes',
    partition: 1,
    head: head('disputes/1/12'),
    held: [],
    missing: 0,
    ...over,
  });

  it('is released once the changelog no longer has the key', () => {
    expect(progressOf(target, undefined)).toBe('released');
  });

  it('waits while the key is parked as it was (not applied yet) or is being replayed', () => {
    expect(progressOf(target, view({}))).toBe('waiting');
    expect(progressOf(target, view({ status: 'replaying', resolution: { retry: true } }))).toBe('waiting');
    expect(progressOf(target, view({ status: 'replaying', headSeq: 2, head: head('disputes/1/30') }))).toBe('waiting');
  });

  it('is parked again when the key is parked at a later event, or parked anew at the same one', () => {
    expect(progressOf(target, view({ headSeq: 2, head: head('disputes/1/30'), parkedAtMs: 8_000 }))).toBe('parked-again');
    expect(progressOf(target, view({ parkedAtMs: 9_000 }))).toBe('parked-again');
  });
});
