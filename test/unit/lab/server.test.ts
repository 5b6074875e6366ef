import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { serveLab, type LabServer } from '../../../src/lab/server.js';

describe('the lab server', () => {
  let dir: string;
  let lab: LabServer | undefined;

  afterEach(async () => {
    await lab?.close();
    lab = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  async function page(files: Record<string, string>): Promise<LabServer> {
    dir = await mkdtemp(join(tmpdir(), 'orderly-lab-'));
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    return (lab = await serveLab({ port: 0, host: '127.0.0.1', dir }));
  }

  it("serves the built page's files by name, with their types, and nothing else", async () => {
    const { url } = await page({ 'index.html': '<main></main>', 'lab.js': 'export {}', 'notes.md': 'private' });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const index = await fetch(url);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await index.text()).toBe('<main></main>');
    expect((await fetch(`${url}lab.js?v=1`)).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    for (const path of ['notes.md', '%2e%2e/package.json', 'missing.js']) expect((await fetch(`${url}${path}`)).status).toBe(404);
    expect((await fetch(url, { method: 'POST' })).status).toBe(404);
  });

  it('says how to build the page when it is not built', async () => {
    dir = await mkdtemp(join(tmpdir(), 'orderly-lab-'));
    await expect(serveLab({ port: 0, host: '127.0.0.1', dir })).rejects.toThrow(
      `orderly lab: the page is not built (no index.html in ${dir}); run \`npm run build\` in the checkout`,
    );
  });
});
