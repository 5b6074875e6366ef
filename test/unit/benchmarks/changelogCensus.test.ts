// The soak's census of changelog segments: record batches v2 as Kafka writes them, read back by
// kind of state key and by section (cleaned, dirty, active), and the cleaner's "caught up".
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { changelogCensus, changelogPartitions, cleanerCaughtUp, recordBatches, type ChangelogPartition } from '../../../benchmarks/kafka/changelogCensus.js';

/** A zigzag varint. */
function varint(n: number): Buffer {
  let z = n >= 0 ? n * 2 : -n * 2 - 1;
  const bytes: number[] = [];
  while (z >= 0x80) {
    bytes.push((z % 0x80) | 0x80);
    z = Math.floor(z / 0x80);
  }
  bytes.push(z);
  return Buffer.from(bytes);
}

/** One record of a batch: key and value (null: a tombstone), its format's header, and the effect records it carries if any (format 4: no headers, `value` as written). */
function record(offsetDelta: number, key: string, value: string | null, carried?: string, headerless = false): Buffer {
  const k = Buffer.from(key);
  const v = value === null ? null : Buffer.from(value);
  const format = Buffer.concat([varint(14), Buffer.from('orderly-format'), varint(1), Buffer.from(carried ? '3' : '2')]);
  const effects =
    carried === undefined
      ? Buffer.alloc(0)
      : Buffer.concat([varint(15), Buffer.from('orderly-effects'), varint(Buffer.byteLength(carried)), Buffer.from(carried)]);
  const body = Buffer.concat([
    Buffer.from([0]),
    varint(offsetDelta * 3),
    varint(offsetDelta),
    varint(k.length),
    k,
    varint(v === null ? -1 : v.length),
    ...(v === null ? [] : [v]),
    ...(headerless ? [varint(0)] : [varint(carried === undefined ? 1 : 2), format, effects]),
  ]);
  return Buffer.concat([varint(body.length), body]);
}

/** A record batch v2 (the CRC is not checked by the census, so it is left 0). */
function batch(baseOffset: number, records: Array<[string, string | null, string?]>, control = false, headerless = false): Buffer {
  const body = Buffer.concat(records.map(([key, value, carried], i) => record(i, key, value, carried, headerless)));
  const header = Buffer.alloc(61);
  header.writeBigInt64BE(BigInt(baseOffset), 0);
  header.writeInt32BE(61 - 12 + body.length, 8);
  header.writeInt8(2, 16);
  header.writeInt16BE(control ? 0x20 : 0, 21);
  header.writeInt32BE(records.length - 1, 23);
  header.writeBigInt64BE(-1n, 43);
  header.writeInt32BE(records.length, 57);
  return Buffer.concat([header, body]);
}

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

it('reads each record of a segment: its offset, the kind of its key, whether it is a tombstone, the effect records it carries; a batch cut short ends the file', () => {
  const first = batch(10, [
    ['effect/s/t/0/t/0/7', '{"offset":7}'],
    ['table/s/t/0/acct-1', '{"count":1}'],
    ['table/s/t/0/acct-2', '{"count":2}', '8 8 {"offset":8}\n9 9 {"offset":9}'],
  ]);
  const second = batch(13, [['effect/s/t/0/t/0/7', null]]);
  const cut = batch(14, [['horizon/s/t/0/offsets', '{}']]).subarray(0, 70);
  const batches = [...recordBatches(Buffer.concat([first, second, cut]))];
  expect(batches.map((b) => b.records.map((r) => [r.offset, r.kind, r.tombstone, r.carried]))).toEqual([
    [
      [10, 'effect', false, 0],
      [11, 'table', false, 0],
      [12, 'table', false, 2],
    ],
    [[13, 'effect', true, 0]],
  ]);
  // Format 4: no headers; a row's value carries one effect record per line after its JSON.
  const v4 = batch(
    20,
    [
      ['table/s/t/0/acct-1', 'v4:{"count":1}\n8 8 {"offset":8}\n9 9 {"offset":9}'],
      ['table/s/t/0/acct-2', 'v4:{"count":2}'],
      ['ring/s/t/0/3', 'v4:{"offset":3}'],
      ['table/s/t/0/acct-3', null],
    ],
    false,
    true,
  );
  expect([...recordBatches(v4)].map((b) => b.records.map((r) => [r.offset, r.kind, r.tombstone, r.carried]))).toEqual([
    [
      [20, 'table', false, 2],
      [21, 'table', false, 0],
      [22, 'ring', false, 0],
      [23, 'table', true, 0],
    ],
  ]);
});

it('counts a group’s changelogs by kind and by section: below the cleaner’s checkpoint, above it, in the active segment', async () => {
  const data = await mkdtemp(join(tmpdir(), 'orderly-census-'));
  dirs.push(data);
  const dir = join(data, 'g-decisions-changelog-0');
  await mkdir(dir);
  await mkdir(join(data, 'other-decisions-changelog-0'));
  const name = (base: number) => join(dir, `${String(base).padStart(20, '0')}.log`);
  // Offsets 0-1 cleaned, 2-3 rolled but dirty, 4 in the active segment.
  await writeFile(
    name(0),
    batch(0, [
      ['table/s/t/0/a', '{}'],
      ['effect/s/t/0/x', null],
    ]),
  );
  await writeFile(name(2), Buffer.concat([batch(2, [['effect/s/t/0/y', '{}']]), batch(3, [['x', 'marker']], true), batch(3, [['effect/s/t/0/y', null]])]));
  await writeFile(name(4), batch(4, [['attempts/s/t/0/0000000000000004', '{}']]));
  await writeFile(join(dir, '00000000000000000000.log.deleted'), Buffer.alloc(256 * 1024));
  await writeFile(join(data, 'cleaner-offset-checkpoint'), '0\n2\ng-decisions-changelog 0 2\nother-decisions-changelog 0 9\n');

  const census = await changelogCensus(data, 'g-decisions');
  expect(census.partitions).toBe(1);
  expect(census.segments).toBe(3);
  expect(census.batches.count).toBe(5);
  expect(census.batches.control).toBe(1);
  expect([census.sections.cleaned.records, census.sections.dirty.records, census.sections.active.records]).toEqual([2, 2, 1]);
  expect(census.kinds.effect).toMatchObject({ records: 3, tombstones: 2 });
  expect(census.kindSections['effect/dirty']).toMatchObject({ records: 2, tombstones: 1 });
  expect(census.kindSections['attempts/active']).toMatchObject({ records: 1, tombstones: 0 });
  expect(census.filesMb.deleted).toBeGreaterThan(0);

  // Not caught up: a cleaned-away file waits for deletion, and a rolled segment is dirty.
  const [partition] = await changelogPartitions(data, 'g-decisions');
  expect(partition).toMatchObject({ cleanedTo: 2, pendingFiles: 1 });
  expect(cleanerCaughtUp([partition!], 0.1)).toBe(false);
  expect(cleanerCaughtUp([{ ...partition!, pendingFiles: 0 }], 0.1)).toBe(false);
});

it('calls the cleaner caught up when every rolled segment is cleaned, or too little of them is dirty for it to pick', () => {
  const p = (segments: Array<[number, number]>, cleanedTo: number): ChangelogPartition => ({
    dir: '',
    name: 'p',
    segments: segments.map(([base, bytes]) => ({ base, bytes })),
    cleanedTo,
    pendingFiles: 0,
  });
  expect(cleanerCaughtUp([p([[0, 100]], 0)], 0.1)).toBe(true); // the active segment alone
  expect(
    cleanerCaughtUp(
      [
        p(
          [
            [0, 900],
            [50, 100],
            [60, 10],
          ],
          60,
        ),
      ],
      0.1,
    ),
  ).toBe(true);
  expect(
    cleanerCaughtUp(
      [
        p(
          [
            [0, 900],
            [50, 100],
            [60, 10],
          ],
          50,
        ),
      ],
      0.1,
    ),
  ).toBe(true); // 100 of 1,000 dirty
  expect(
    cleanerCaughtUp(
      [
        p(
          [
            [0, 800],
            [50, 200],
            [60, 10],
          ],
          50,
        ),
      ],
      0.1,
    ),
  ).toBe(false); // 200 of 1,000
});
