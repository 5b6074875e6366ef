import type { VariantResult } from '../../../testkit/scenarios/workedExample.js';
import { escapeXml } from './glyphs.js';

// What each figure means, in the words of docs/worked-example.md.
const meaning: Readonly<Record<keyof VariantResult, string>> = {
  variant: 'variant',
  events: 'events',
  held: 'held behind a parked event',
  modelCalls: 'model calls accepted',
  rateLimitedResponses: '429 responses',
  wastedModelCalls: 'calls for already applied events',
  endMs: 'last event finished (ms)',
  lowerBoundMs: 'lower bound (ms)',
  redelivered: 'redelivered',
  redeliveredAlreadyApplied: 'redelivered, already applied',
  doubleEffects: 'double effects',
  orderViolations: 'per-key order violations',
  parked: 'parked',
};

/**
 * The run's figures: every field of the CLI's JSON row (`orderly scenario worked-example --json`),
 * each in an element `data-figure="<field>"` holding the same value.
 */
export function figuresHtml(result: VariantResult): string {
  const rows = Object.entries(result).map(
    ([field, value]) =>
      `<tr><th title="${field}">${escapeXml(meaning[field as keyof VariantResult] ?? field)}</th><td data-figure="${field}">${escapeXml(String(value))}</td></tr>`,
  );
  return `<h2>Figures</h2><table>${rows.join('')}</table>`;
}
