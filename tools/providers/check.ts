/**
 * `npm run -s providers:check [-- --json]`: runs each provider adapter on its real SDK (the
 * versions pinned in package.json) through a small topology on the engine with the real clock,
 * against a stand-in server on 127.0.0.1 that allows 10 calls per 10 s and answers 429 past them.
 * Prints one row per provider (with --json one JSON object a line) and exits 1 when a row shows
 * an SDK retry, a call that did not wait out a refusal, an invalid decision, or no refusal at all.
 */
import { checkProvider, holds, type CheckRow } from './checkProvider.js';
import { sdkAdapters } from './sdkAdapters.js';

const OPTIONS = { events: 15, window: { calls: 10, windowMs: 10_000 }, timeoutMs: 50_000 };

async function main(argv: readonly string[]): Promise<void> {
  const unknown = argv.filter((a) => a !== '--json');
  if (unknown.length > 0) throw new Error(`providers:check: unknown argument ${unknown.join(' ')}; the only option is --json`);
  // Each provider has its own stand-in server, so the three run at once.
  const rows = await Promise.all(sdkAdapters.map((adapter) => checkProvider(adapter, OPTIONS)));
  process.stdout.write(argv.includes('--json') ? rows.map((row) => `${JSON.stringify(row)}\n`).join('') : table(rows));
  if (!rows.every(holds)) process.exitCode = 1;
}

function table(rows: readonly CheckRow[]): string {
  const head = ['provider', 'sdkVersion', 'calls', 'rateLimited', 'sdkRetries', 'decisionsValid', 'waitedAtLeastRetryAfter', 'elapsedMs'] as const;
  const cells = [head.map(String), ...rows.map((row) => head.map((h) => String(row[h])))];
  const widths = head.map((_, i) => Math.max(...cells.map((c) => c[i]!.length)));
  return cells.map((c) => c.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')).join('\n') + '\n';
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
