import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store, StoreOp } from '../../../src/ports/store.js';
import { openLevelStore, openMemoryStore, StateDirectoryError } from '../../../src/state/levelStore.js';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('./fixtures/openStateDir.ts', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Opens the directory in a child Node process (through tsx) and returns what it saw. */
async function openInChild(directory: string): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', fixture, directory], { cwd: root, timeout: 60_000 });
  return JSON.parse(stdout) as Record<string, unknown>;
}

let dir: string;
const open: Store[] = [];
const track = <S extends Store>(s: S): S => {
  open.push(s);
  return s;
};

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'orderly-level-'));
});

afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
  await rm(dir, { recursive: true, force: true });
});

describe('openLevelStore', () => {
  it('keeps what was written across close and reopen', async () => {
    const first = await openLevelStore(dir);
    await first.batch([
      { type: 'put', key: 'effect/fx/a', value: { applied: true, n: 1 } },
      { type: 'put', key: 'effect/fx/b', value: [1, 'two', null] },
      { type: 'put', key: 'table/fx/row', value: 'text' },
    ]);
    await first.batch([{ type: 'del', key: 'effect/fx/b' }]);
    await first.close();

    const second = track(await openLevelStore(dir));
    expect(second.location).toBe(dir);
    expect(second.get('effect/fx/a')).toEqual({ applied: true, n: 1 });
    expect(second.get('effect/fx/b')).toBeUndefined();
    expect(second.get('table/fx/row')).toBe('text');
    expect(second.get('missing')).toBeUndefined();
  });

  it('lists the entries under a prefix in key order, and nothing outside it', async () => {
    const store = track(await openLevelStore(dir));
    await store.batch([
      { type: 'put', key: 'parked/p/disputes/0/b', value: 2 },
      { type: 'put', key: 'parked/p/disputes/0/a', value: 1 },
      { type: 'put', key: 'parked/p/disputes/1/a', value: 3 },
      { type: 'put', key: 'parked/p/disputes/0', value: 'no slash' },
      { type: 'put', key: 'parked/q/disputes/0/a', value: 4 },
    ]);
    expect(await store.entries('parked/p/disputes/0/')).toEqual([
      ['parked/p/disputes/0/a', 1],
      ['parked/p/disputes/0/b', 2],
    ]);
    expect(await store.entries('nothing/')).toEqual([]);
  });

  it('refuses a second open of the same directory in the same process with LOCKED, naming the directory', async () => {
    track(await openLevelStore(dir));
    const error = await openLevelStore(dir).then(
      (s) => {
        track(s);
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StateDirectoryError);
    const e = error as StateDirectoryError;
    expect(e.code).toBe('LOCKED');
    expect(e.directory).toBe(dir);
    expect(e.message).toContain(`state directory '${dir}' is in use by another orderly process`);
    expect(e.message).toContain('give this one its own --state-dir');
  });

  it('refuses an open of the same directory from another process with LOCKED, naming the directory; once closed, it opens', async () => {
    const held = await openLevelStore(dir);
    await held.batch([{ type: 'put', key: 'greeting', value: 'hello' }]);
    const refused = await openInChild(dir);
    expect(refused).toMatchObject({ opened: false, name: 'StateDirectoryError', isStateDirectoryError: true, code: 'LOCKED', directory: dir });
    expect(refused.message).toContain(`state directory '${dir}' is in use by another orderly process`);

    await held.close();
    // The same child opens it once the lock is released, and sees the data: the refusal was the lock.
    expect(await openInChild(dir)).toEqual({ opened: true, seen: 'hello' });
  }, 120_000);

  it('reports a directory that cannot be LevelDB as UNREADABLE, naming it', async () => {
    const notADir = join(dir, 'file');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(notADir, 'not a database');
    const error = await openLevelStore(notADir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateDirectoryError);
    expect((error as StateDirectoryError).code).toBe('UNREADABLE');
    expect((error as StateDirectoryError).message).toContain(`state directory '${notADir}' could not be opened as LevelDB`);
  });
});

describe.each([
  ['LevelDB', () => openLevelStore(dir)],
  ['memory-level', () => openMemoryStore()],
])('atomic batches (%s)', (_name, openStore) => {
  it('applies every op of a batch, in order, puts and dels together', async () => {
    const store = track(await openStore());
    await store.batch([{ type: 'put', key: 'k/a', value: 1 }]);
    await store.batch([
      { type: 'del', key: 'k/a' },
      { type: 'put', key: 'k/b', value: 2 },
      { type: 'put', key: 'k/c', value: 3 },
      { type: 'put', key: 'k/c', value: 4 },
    ]);
    expect(await store.entries('k/')).toEqual([
      ['k/b', 2],
      ['k/c', 4],
    ]);
  });

  it('applies none of a batch that fails', async () => {
    const store = track(await openStore());
    await store.batch([{ type: 'put', key: 'k/kept', value: 'before' }]);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expect(
      store.batch([
        { type: 'put', key: 'k/first', value: 1 },
        { type: 'del', key: 'k/kept' },
        { type: 'put', key: 'k/bad', value: cyclic },
      ]),
    ).rejects.toThrow();
    expect(store.get('k/first')).toBeUndefined();
    expect(store.get('k/kept')).toBe('before');
    expect(await store.entries('k/')).toEqual([['k/kept', 'before']]);
  });

  it('refuses a batch with a null value whole', async () => {
    const store = track(await openStore());
    await expect(
      store.batch([
        { type: 'put', key: 'k/first', value: 1 },
        { type: 'put', key: 'k/null', value: null },
      ]),
    ).rejects.toThrow(/null or undefined/);
    expect(await store.entries('k/')).toEqual([]);
  });

  it("stores a put that carries its stored text ('utf8') as it is, and refuses a batch whose put names another encoding, whole", async () => {
    const store = track(await openStore());
    await store.batch([{ type: 'put', key: 'k/text', value: 'v2:{"n":1,"s":"é ✓ \\ud800"}', valueEncoding: 'utf8' } as StoreOp]);
    expect(store.get('k/text')).toEqual({ n: 1, s: 'é ✓ \ud800' });
    await expect(
      store.batch([{ type: 'put', key: 'k/first', value: 1 }, { type: 'put', key: 'k/bytes', value: Buffer.from('v2:1'), valueEncoding: 'buffer' } as StoreOp]),
    ).rejects.toThrow("state key 'k/bytes': a put's valueEncoding must be 'utf8' (its stored text) or absent, got \"buffer\"");
    expect(await store.entries('k/')).toEqual([['k/text', { n: 1, s: 'é ✓ \ud800' }]]);
  });

  it('treats an empty batch as nothing to do', async () => {
    const store = track(await openStore());
    await expect(store.batch([])).resolves.toBeUndefined();
    expect(await store.entries('')).toEqual([]);
  });

  it('deletes the keys under a prefix in batches, and none outside it', async () => {
    const store = track(await openStore());
    const inside = Array.from({ length: 25 }, (_, i) => `effect/fx/in/1/e${i}`);
    await store.batch([...inside, 'effect/fx/in/10/e1', 'effect/fx/in/0/e1'].map((key) => ({ type: 'put' as const, key, value: 1 })));
    expect(await store.deletePrefix('effect/fx/in/1/', 7)).toBe(25);
    expect((await store.entries<number>('')).map(([k]) => k)).toEqual(['effect/fx/in/0/e1', 'effect/fx/in/10/e1']);
    expect(await store.deletePrefix('effect/fx/in/1/')).toBe(0);
  });
});
