import type { ParkedEvent } from '../engine/parkedKeys.js';
import type { ParkedKeyView } from '../kafka/parked/parkedChangelog.js';

// What `orderly parked list|show` print: plain text for a person, JSON (--json) for a script.

/** One parked key in `parked list --json`. */
export interface ParkedKeySummary {
  readonly partition: number;
  /** The key, or null for an event without one (then `lane` names it). */
  readonly key: string | null;
  readonly lane: string;
  readonly status: 'parked' | 'replaying';
  readonly head: { readonly offset: number; readonly effectId: string; readonly attempts: number; readonly lastError: string | null } | null;
  /** Events held behind the head. */
  readonly held: number;
  readonly parkedAt: string;
  readonly parkedAtMs: number;
}

export function summaryOf(view: ParkedKeyView): ParkedKeySummary {
  const head = view.head;
  return {
    partition: view.partition,
    key: view.key,
    lane: view.lane,
    status: view.status,
    head: head ? { offset: head.event.offset, effectId: head.event.effectId, attempts: head.attempts, lastError: head.errors.at(-1)?.error ?? null } : null,
    held: view.nextSeq - view.headSeq - 1,
    parkedAt: new Date(view.parkedAtMs).toISOString(),
    parkedAtMs: view.parkedAtMs,
  };
}

/** The table of `parked list`. */
export function formatList(views: readonly ParkedKeyView[], topic: string): string {
  if (views.length === 0) return `no parked keys on ${topic}\n`;
  const rows = views
    .map(summaryOf)
    .map((s) => [
      String(s.partition),
      s.lane,
      s.status,
      s.head ? String(s.head.offset) : '?',
      s.head?.effectId ?? '(not in the changelog yet)',
      String(s.held),
      s.parkedAt,
    ]);
  const header = ['PARTITION', 'KEY', 'STATUS', 'OFFSET', 'EFFECT ID', 'HELD', 'PARKED AT'];
  return `${table([header, ...rows])}${views.length} parked key${views.length === 1 ? '' : 's'} on ${topic}\n`;
}

/** The head event of a parked key with its attempts and errors, then the held events in order. */
export function formatShow(view: ParkedKeyView): string {
  const lines = [`key '${view.lane}' of ${view.topic}/${view.partition}: ${view.status}, parked at ${new Date(view.parkedAtMs).toISOString()}`];
  if (view.status === 'replaying' && view.resolution) lines.push(`  resolved: ${JSON.stringify(view.resolution)}; its events are being replayed`);
  const head = view.head;
  if (head) {
    lines.push('', `head (the event a resolution decides): ${describeEvent(head)}`);
    const attempts = `${head.attempts} attempt${head.attempts === 1 ? '' : 's'}`;
    // The step's own decision kept with it: the step had answered, and what follows it failed.
    const decided = head.decisions !== undefined && head.step in head.decisions;
    lines.push(
      head.reason !== 'POISON'
        ? `  step '${head.step}', held, then reached the head of the key`
        : decided
          ? `  step '${head.step}' decided; what follows it (the effect, or an operator after the step) failed its ${attempts}: a replay runs that again with the decision kept`
          : `  step '${head.step}', parked after ${attempts}: a replay calls the step again`,
    );
    for (const e of head.errors) lines.push(`  attempt ${e.attempt} at ${new Date(e.atMs).toISOString()}: ${e.error}`);
    lines.push(`  value: ${valueOf(head)}`);
  } else {
    lines.push('', 'head: not in the changelog yet (its owner is still writing it); look again');
  }
  lines.push('', view.held.length === 0 ? 'no events held behind it' : `held behind it, in order (${view.held.length}):`);
  for (const held of view.held) lines.push(`  ${describeEvent(held)}  value: ${valueOf(held)}`);
  if (view.missing > 0) lines.push(`  (${view.missing} more not in the changelog yet)`);
  return `${lines.join('\n')}\n`;
}

function describeEvent(parked: ParkedEvent): string {
  const e = parked.event;
  return `offset ${e.offset}, effect id ${e.effectId}, ${parked.reason.toLowerCase()} at ${new Date(parked.parkedAtMs).toISOString()}`;
}

/** The event's value as UTF-8 text when it is, else its size and base64. */
function valueOf(parked: ParkedEvent): string {
  const base64 = parked.event.valueBase64;
  if (base64 === null) return '(null)';
  const bytes = Buffer.from(base64, 'base64');
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return text.length > 400 ? `${text.slice(0, 400)}... (${bytes.length} bytes)` : text;
  } catch {
    return `(${bytes.length} bytes, base64) ${base64.slice(0, 200)}`;
  }
}

function table(rows: readonly string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}
