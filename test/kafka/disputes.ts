// Inputs of the disputes example and checks of what it wrote.
import { mkdtemp, rm } from 'node:fs/promises';
import { onTestFinished } from 'vitest';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EFFECT_ID_HEADER } from '../../src/engine/outputs.js';
import type { Dispute } from '../../testkit/scenarios/disputes.js';
import { createTopic, produce, type InputRecord, type ReadRecord } from './kafkaClient.js';

let runs = 0;

/** Topic prefix, group and state directory of one test, unique within and across runs; the directory goes when the test ends. */
export async function scenario(name: string): Promise<{ prefix: string; group: string; stateDir: string }> {
  runs += 1;
  const prefix = `${name}-${process.pid}-${Date.now()}-${runs}.`;
  const dir = await mkdtemp(join(tmpdir(), `orderly-${name}-`));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return { prefix, group: `${prefix}group`, stateDir: join(dir, 'state') };
}

/**
 * A scenario whose source topic `<prefix>disputes` has `partitions` partitions and already holds
 * `count` disputes over `accounts` accounts (with `reason(i)` for dispute i, if given).
 */
export async function prefilledScenario(
  bootstrap: string,
  name: string,
  input: { count: number; accounts: number; partitions: number; reason?: (i: number) => string },
): Promise<{ prefix: string; group: string; stateDir: string; inputs: Dispute[] }> {
  const names = await scenario(name);
  const inputs = disputes(input.count, input.accounts, input.reason);
  await createTopic(bootstrap, `${names.prefix}disputes`, input.partitions);
  await produce(bootstrap, `${names.prefix}disputes`, inputs.map(asInput));
  return { ...names, inputs };
}

/** `count` disputes over `accounts` accounts, round robin; dispute i of an account is `d-<i>`. */
export function disputes(count: number, accounts: number, reason: (i: number) => string = (i) => (i % 7 === 0 ? 'fraud' : 'not-received')): Dispute[] {
  return Array.from({ length: count }, (_, i) => {
    const account = `acct-${String(i % accounts).padStart(2, '0')}`;
    return { disputeId: `d-${String(i).padStart(4, '0')}`, account, amount: 10 + ((i * 37) % 120), reason: reason(i) };
  });
}

export function asInput(dispute: Dispute): InputRecord {
  return { key: dispute.account, value: JSON.stringify(dispute) };
}

/** The decisions on the output, deduplicated by effect id (first copy kept), in the order read per partition. */
export function dedupe(records: readonly ReadRecord[]): { unique: ReadRecord[]; copies: number } {
  const seen = new Set<string>();
  const unique: ReadRecord[] = [];
  for (const r of [...records].sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    const id = r.headers[EFFECT_ID_HEADER];
    if (id === undefined) throw new Error(`output record ${r.partition}@${r.offset} has no ${EFFECT_ID_HEADER} header`);
    if (seen.has(id)) continue;
    seen.add(id);
    unique.push(r);
  }
  return { unique, copies: records.length - unique.length };
}

export function disputeIdOf(record: ReadRecord): string {
  return (JSON.parse(record.value ?? 'null') as { disputeId: string }).disputeId;
}

/** The disputeId of a park record (its JSON body holds the event's raw value in base64). */
export function parkedDisputeId(record: ReadRecord): string {
  const body = JSON.parse(record.value ?? 'null') as { valueBase64: string };
  return (JSON.parse(Buffer.from(body.valueBase64, 'base64').toString()) as { disputeId: string }).disputeId;
}

/** How many inputs have a decision on the output (after deduplication). */
export function decided(records: readonly ReadRecord[]): number {
  return new Set(records.map(disputeIdOf)).size;
}

/**
 * Problems with the decisions: a dispute decided twice (two effect ids), one missing, one that
 * should not be there, or an account whose decisions are not in its input order.
 */
export function checkDecisions(inputs: readonly Dispute[], records: readonly ReadRecord[]): string[] {
  const problems: string[] = [];
  const { unique } = dedupe(records);
  const byDispute = new Map<string, number>();
  for (const r of unique) byDispute.set(disputeIdOf(r), (byDispute.get(disputeIdOf(r)) ?? 0) + 1);
  for (const [id, n] of byDispute) if (n > 1) problems.push(`${id} decided ${n} times under different effect ids`);
  const expected = new Set(inputs.map((d) => d.disputeId));
  for (const d of inputs) if (!byDispute.has(d.disputeId)) problems.push(`${d.disputeId} (${d.account}) has no decision`);
  for (const id of byDispute.keys()) if (!expected.has(id)) problems.push(`${id} was decided but not expected`);
  const seenOrder = new Map<string, string[]>();
  for (const r of unique) {
    const list = seenOrder.get(r.key ?? '') ?? [];
    list.push(disputeIdOf(r));
    seenOrder.set(r.key ?? '', list);
  }
  for (const [account, got] of seenOrder) {
    const want = inputs.filter((d) => d.account === account && got.includes(d.disputeId)).map((d) => d.disputeId);
    if (got.join() !== want.join()) problems.push(`${account}: decisions in order ${got.join(' ')}, inputs in order ${want.join(' ')}`);
  }
  return problems;
}
