// The lab page in a real browser: Debian's chromium, driven by playwright-core (no browser
// download; scripts/setup.sh installs chromium). Runs against the built CLI: `npm run build` first.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWorkedExample, workedExampleVariants, type VariantResult } from '../../testkit/scenarios/workedExample.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = '.cache/lab';
const run = promisify(execFile);

let server: ChildProcess;
let url: string;
let browser: Browser;
let cliRows: VariantResult[];

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`the lab tests need ${CHROMIUM}: run scripts/setup.sh (as root, it installs Debian's chromium) or apt-get install chromium`);
  const cli = await run(process.execPath, ['bin/orderly', 'scenario', 'worked-example', '--json']);
  cliRows = JSON.parse(cli.stdout) as VariantResult[];
  server = spawn(process.execPath, ['bin/orderly', 'lab', '--port', '0', '--host', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'inherit'] });
  url = await new Promise<string>((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const found = /http:\/\/127\.0\.0\.1:\d+\//.exec(out);
      if (found) resolve(found[0]);
    });
    server.once('exit', (code) => reject(new Error(`orderly lab exited with ${code} before serving: ${out}`)));
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  await mkdir(SCREENSHOTS, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  server?.kill('SIGTERM');
});

/** Every `data-figure` element of the page, field → text. */
async function figures(page: Page): Promise<Record<string, string>> {
  return page.$$eval('[data-figure]', (elements) => Object.fromEntries(elements.map((e) => [e.getAttribute('data-figure'), e.textContent])));
}

function asText(row: VariantResult): Record<string, string> {
  return Object.fromEntries(Object.entries(row).map(([field, value]) => [field, String(value)]));
}

/** Every address the page asked for, by page: the page must need nothing but its own server. */
const requested = new WeakMap<Page, string[]>();

async function openDone(query: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1420, height: 900 } });
  const urls: string[] = [];
  requested.set(page, urls);
  page.on('request', (request) => urls.push(request.url()));
  await page.goto(`${url}?${query}`);
  await page.waitForSelector('main[data-state="done"]', { timeout: 60_000 });
  return page;
}

describe('orderly lab page', () => {
  for (const variant of workedExampleVariants) {
    it(`draws ${variant} with every figure of the CLI's JSON row`, async () => {
      const page = await openDone(`variant=${variant}`);
      try {
        const row = cliRows.find((r) => r.variant === variant)!;
        expect(await figures(page)).toEqual(asText(row));
        expect(requested.get(page)).toContain(`${url}lab.js`);
        expect(requested.get(page)!.filter((address) => !address.startsWith(url))).toEqual([]);
        // The timeline has a row per key of every partition, and the run's calls on it.
        expect(await page.locator('#timeline svg.plot rect[fill="#3b6fd0"]').count()).toBe(row.modelCalls);
        if (variant.startsWith('crash-')) expect(await page.locator('#timeline svg.plot text', { hasText: /^crash$/ }).count()).toBe(1);
        await page.screenshot({ path: `${SCREENSHOTS}/${variant}.png`, fullPage: true });
      } finally {
        await page.close();
      }
    });
  }

  it('reruns and redraws when a control changes, and the address then holds the run', async () => {
    const page = await openDone('variant=retry-after');
    try {
      const before = await page.locator('#timeline svg.plot').innerHTML();
      await page.locator('input[name="latencyMs"]').fill('2000');
      await page.locator('input[name="latencyMs"]').blur();
      const expected = asText(await runWorkedExample('retry-after', { settings: { latencyMs: 2_000 } }));
      expect(expected.endMs).not.toBe(asText(cliRows[0]!).endMs);
      await expect.poll(() => figures(page), { timeout: 30_000 }).toEqual(expected);
      await page.waitForSelector('main[data-state="done"]');
      expect(new URL(page.url()).searchParams.get('latencyMs')).toBe('2000');
      expect(await page.locator('#timeline svg.plot').innerHTML()).not.toBe(before);
      await page.screenshot({ path: `${SCREENSHOTS}/latency-2000.png`, fullPage: true });

      const shared = await openDone(new URL(page.url()).search.slice(1));
      expect(await figures(shared)).toEqual(expected);
      expect(await shared.locator('input[name="latencyMs"]').inputValue()).toBe('2000');
      await shared.close();
    } finally {
      await page.close();
    }
  });

  it('says which setting is wrong, and why, for a bad address', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${url}?variant=retry-after&attempts=0`);
      await page.waitForSelector('main[data-state="error"]');
      expect(await page.locator('#status').textContent()).toBe("worked example: attempts must be a whole number from 1 to 10, got '0'");
    } finally {
      await page.close();
    }
  });
});
