import type { TimelineMark, WorkedExampleTimeline } from '../../../testkit/scenarios/workedExampleTimeline.js';
import { escapeXml, glyph, legendHtml, type GlyphKind } from './glyphs.js';

const LEFT = 110;
const PLOT_WIDTH = 960;
const AXIS_HEIGHT = 34;
const PARTITION_ROW = 20;
const KEY_ROW = 18;
const PARTITION_GAP = 8;

/** Draws a run as an SVG timeline: a header row per partition (its commits), a row per key below it. */
export function timelineHtml(timeline: WorkedExampleTimeline): string {
  const rows = rowLayout(timeline.keysByPartition);
  const endMs = Math.max(timeline.windowMs, ...timeline.marks.map(markEndMs));
  const spanMs = Math.ceil(endMs / timeline.windowMs) * timeline.windowMs;
  const x = (ms: number) => LEFT + (ms / spanMs) * PLOT_WIDTH;
  const height = rows.height + 6;
  const crashAtMs = timeline.marks.find((m) => m.kind === 'crash')?.atMs;
  const parts: string[] = [];
  parts.push(windowBands(timeline.windowMs, spanMs, height, x));
  for (const [p, keys] of timeline.keysByPartition.entries()) {
    const y = rows.partitionY[p]!;
    parts.push(`<text x="4" y="${y + 14}" font-weight="600" font-size="12">partition ${p}</text>`);
    parts.push(`<line x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${y + PARTITION_ROW - 1}" y2="${y + PARTITION_ROW - 1}" stroke="#c9ced8"/>`);
    keys.forEach((key, k) =>
      parts.push(
        `<text x="14" y="${rows.keyY(p, key) + 4}" font-size="11" fill="#4a5160">${escapeXml(key)}</text>`,
        k % 2 ? '' : `<rect x="${LEFT}" y="${rows.keyY(p, key) - KEY_ROW / 2}" width="${PLOT_WIDTH}" height="${KEY_ROW}" fill="#000" fill-opacity="0.025"/>`,
      ),
    );
  }
  // Outcomes at the same moment of one key (a park and the events it holds) side by side, not on top of each other.
  const atSameSpot = new Map<string, number>();
  const spread = (mark: TimelineMark) => {
    if (mark.kind !== 'outcome' || !outcomeGlyph(mark.outcome, mark.replayed === true)) return 0;
    const spot = `${mark.partition}/${mark.key}/${Math.round(x(mark.atMs) / 4)}`;
    const before = atSameSpot.get(spot) ?? 0;
    atSameSpot.set(spot, before + 1);
    return before * 10;
  };
  const unlabelled = crowdedCommits(timeline.marks, x);
  for (const mark of drawOrder(timeline.marks)) {
    const dx = spread(mark);
    parts.push(drawMark(mark, (ms) => x(ms) + dx, rows, crashAtMs ?? spanMs, height, !unlabelled.has(mark)));
  }
  return (
    `<h2>Timeline (virtual time; shaded bands are the model's ${timeline.windowMs / 1000} s windows)</h2>` +
    legendHtml() +
    `<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="${LEFT + PLOT_WIDTH + 40}" height="${height}" font-family="system-ui, sans-serif" role="img" aria-label="timeline of the run">${parts.join('')}</svg>`
  );
}

interface Rows {
  readonly partitionY: readonly number[];
  keyY(partition: number, key: string): number;
  readonly height: number;
}

function rowLayout(keysByPartition: readonly (readonly string[])[]): Rows {
  const partitionY: number[] = [];
  const keyYs = new Map<string, number>();
  let y = AXIS_HEIGHT;
  keysByPartition.forEach((keys, p) => {
    partitionY.push(y);
    y += PARTITION_ROW;
    for (const key of keys) {
      keyYs.set(`${p}/${key}`, y + KEY_ROW / 2);
      y += KEY_ROW;
    }
    y += PARTITION_GAP;
  });
  return { partitionY, keyY: (p, key) => keyYs.get(`${p}/${key}`) ?? partitionY[p]! + PARTITION_ROW / 2, height: y };
}

function windowBands(windowMs: number, spanMs: number, height: number, x: (ms: number) => number): string {
  const windows = spanMs / windowMs;
  const labelEvery = Math.max(1, Math.ceil(windows / 20));
  const out: string[] = [];
  for (let w = 0; w < windows; w++) {
    const x0 = x(w * windowMs);
    if (w % 2 === 0) out.push(`<rect x="${x0}" y="${AXIS_HEIGHT - 6}" width="${x((w + 1) * windowMs) - x0}" height="${height - AXIS_HEIGHT}" fill="#e9eef7"/>`);
    if (w % labelEvery === 0)
      out.push(
        `<text x="${x0}" y="16" font-size="11" text-anchor="middle" fill="#4a5160">${formatSeconds(w * windowMs)}</text><line x1="${x0}" x2="${x0}" y1="20" y2="${AXIS_HEIGHT - 6}" stroke="#8a93a3"/>`,
      );
  }
  out.push(`<text x="${x(spanMs)}" y="16" font-size="11" text-anchor="middle" fill="#4a5160">${formatSeconds(spanMs)}</text>`);
  return out.join('');
}

// Bars first, then the points on them, then the lines across every row.
function drawOrder(marks: readonly TimelineMark[]): TimelineMark[] {
  const rank = (m: TimelineMark) => (m.kind === 'pause' ? 0 : m.kind === 'call' ? 1 : m.kind === 'crash' || m.kind === 'restart' ? 3 : 2);
  return [...marks].sort((a, b) => rank(a) - rank(b));
}

/** Commits whose offset label the partition's next commit, drawn within a label's width, would overwrite: only the later label shows. */
function crowdedCommits(marks: readonly TimelineMark[], x: (ms: number) => number): Set<TimelineMark> {
  const crowded = new Set<TimelineMark>();
  const last = new Map<number, Extract<TimelineMark, { kind: 'commit' }>>();
  for (const mark of [...marks].sort((a, b) => ('atMs' in a ? a.atMs : a.startMs) - ('atMs' in b ? b.atMs : b.startMs))) {
    if (mark.kind !== 'commit') continue;
    const before = last.get(mark.partition);
    if (before && x(mark.atMs) - x(before.atMs) < 16) crowded.add(before);
    last.set(mark.partition, mark);
  }
  return crowded;
}

function drawMark(mark: TimelineMark, x: (ms: number) => number, rows: Rows, lostEndMs: number, height: number, labelled: boolean): string {
  switch (mark.kind) {
    case 'call': {
      const y = rows.keyY(mark.partition, mark.key);
      const endMs = mark.endMs ?? lostEndMs;
      const kind: GlyphKind = mark.result === 'rate-limited' ? 'rate-limited' : mark.result === 'lost' ? 'lost-call' : 'call';
      const title = `partition ${mark.partition}, ${mark.key}, offset ${mark.offset}, attempt ${mark.attempt}: ${mark.result === 'rate-limited' ? '429' : mark.result === 'lost' ? 'call lost to the crash' : 'model call'} ${formatSeconds(mark.startMs)}–${formatSeconds(endMs)}`;
      const width = Math.max(mark.result === 'rate-limited' ? 2 : 1, x(endMs) - x(mark.startMs));
      const label =
        kind === 'call' && width > 16
          ? `<text x="${x(mark.startMs) + 3}" y="${y + 3.5}" font-size="9" fill="#fff" pointer-events="none">#${mark.offset}</text>`
          : '';
      return glyph(kind, x(mark.startMs), y, width, title) + label;
    }
    case 'pause':
      return glyph(
        'pause',
        x(mark.startMs),
        rows.keyY(mark.partition, mark.key),
        x(mark.endMs) - x(mark.startMs),
        `partition ${mark.partition}, ${mark.key}, offset ${mark.offset}: waiting after a 429 for its next call ${formatSeconds(mark.startMs)}–${formatSeconds(mark.endMs)}`,
      );
    case 'outcome': {
      const kind = outcomeGlyph(mark.outcome, mark.replayed === true);
      if (!kind) return '';
      const attempt = mark.attempt !== undefined ? `, attempt ${mark.attempt}` : '';
      return glyph(
        kind,
        x(mark.atMs),
        rows.keyY(mark.partition, mark.key),
        0,
        `partition ${mark.partition}, ${mark.key}, offset ${mark.offset}: ${mark.outcome}${mark.replayed ? ' (replay)' : ''}${attempt} at ${formatSeconds(mark.atMs)}`,
      );
    }
    case 'redelivery':
      return glyph(
        'redelivery',
        x(mark.atMs),
        rows.keyY(mark.partition, mark.key),
        0,
        `partition ${mark.partition}, ${mark.key}, offset ${mark.offset}: redelivered at ${formatSeconds(mark.atMs)}`,
      );
    case 'commit': {
      const y = rows.partitionY[mark.partition]! + PARTITION_ROW / 2;
      const label = labelled ? `<text x="${x(mark.atMs) + 4}" y="${y + 4}" font-size="9" fill="#1f6f43">${mark.offset}</text>` : '';
      return glyph('commit', x(mark.atMs), y, 0, `partition ${mark.partition}: committed offset ${mark.offset} at ${formatSeconds(mark.atMs)}`) + label;
    }
    case 'crash':
    case 'restart':
      // The crash's label left of its line, the restart's right of it: they stay apart however close the two are.
      return (
        glyph(mark.kind, x(mark.atMs), AXIS_HEIGHT - 6, height - AXIS_HEIGHT, `${mark.kind} at ${formatSeconds(mark.atMs)}`) +
        `<text x="${x(mark.atMs) + (mark.kind === 'crash' ? -3 : 3)}" y="${AXIS_HEIGHT - 8}" text-anchor="${mark.kind === 'crash' ? 'end' : 'start'}" font-size="10" font-weight="600" fill="${mark.kind === 'crash' ? '#b3261e' : '#1f6f43'}">${mark.kind}</text>`
      );
  }
}

function outcomeGlyph(outcome: string, replayed: boolean): GlyphKind | undefined {
  if (replayed) return 'replay';
  switch (outcome) {
    case 'APPLIED':
      return 'applied';
    case 'DUPLICATE':
      return 'duplicate';
    case 'RETRY':
      return 'attempt-failed';
    case 'PARKED':
      return 'parked';
    case 'HELD':
      return 'held';
    case 'RATE_LIMITED':
      return undefined; // its 429 call is drawn
    default:
      return 'other';
  }
}

function markEndMs(mark: TimelineMark): number {
  if (mark.kind === 'call') return mark.endMs ?? mark.startMs;
  if (mark.kind === 'pause') return mark.endMs;
  return mark.atMs;
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(2))} s`;
}
