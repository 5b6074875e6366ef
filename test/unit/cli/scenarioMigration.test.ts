// `orderly scenario migration --json` (the compiled CLI): one row per way of moving the worked
// example's decision to an agent step, every figure measured by the run.
import { expect, test } from 'vitest';
import type { MigrationRow as Row } from '../../../testkit/scenarios/migration.js';
import { orderlyCli } from './orderlyCli.js';

test('orderly scenario migration --json prints the four modes: rules first saves calls, no shadow decision is applied, the fallback decides while the model is down', async () => {
  const run = await orderlyCli(['scenario', 'migration', '--json']);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).toBe('');
  const rows = JSON.parse(run.stdout) as Row[];
  expect(rows.map((r) => r.mode)).toEqual(['agent', 'rules-first', 'shadow', 'fallback']);
  const [agent, rulesFirst, shadow, fallback] = rows as [Row, Row, Row, Row];
  for (const row of rows) {
    expect(Object.keys(row)).toEqual([
      'mode',
      'events',
      'modelCalls',
      'decidedByRule',
      'decidedByAgent',
      'decidedByFallback',
      'shadowDisagreements',
      'shadowApplied',
      'endMs',
      'doubleEffects',
      'orderViolations',
      'parked',
    ]);
    expect(row.events, row.mode).toBe(24);
    expect(row.shadowApplied, row.mode).toBe(0);
    expect(row.doubleEffects, row.mode).toBe(0);
    expect(row.orderViolations, row.mode).toBe(0);
    expect(row.endMs, row.mode).toBeGreaterThan(0);
  }
  // The agent decides every event that is not parked or held behind the parked one.
  expect(agent).toMatchObject({ decidedByRule: 0, decidedByFallback: 0, shadowDisagreements: 0, parked: 1 });
  expect(agent.decidedByAgent).toBe(21);
  // Rules first: the routine events never reach the model.
  expect(rulesFirst.decidedByRule).toBeGreaterThan(0);
  expect(rulesFirst.decidedByRule + rulesFirst.decidedByAgent).toBe(agent.decidedByAgent);
  expect(rulesFirst.modelCalls).toBeLessThan(agent.modelCalls);
  // Shadow: every applied decision is the handler's; the agent's disagree on some, and park nothing.
  expect(shadow).toMatchObject({ decidedByAgent: 0, decidedByFallback: 0, parked: 0, decidedByRule: 24 });
  expect(shadow.shadowDisagreements).toBeGreaterThan(0);
  // Fallback: the model is down from 10 s to 20 s; the fallback decides some events meanwhile.
  expect(fallback.decidedByFallback).toBeGreaterThan(0);
  expect(fallback.decidedByAgent).toBeGreaterThan(0);
}, 120_000);
