/** What the timeline draws, each with one look, shared by the plot and its legend. */
export type GlyphKind =
  | 'call'
  | 'rate-limited'
  | 'lost-call'
  | 'pause'
  | 'attempt-failed'
  | 'parked'
  | 'held'
  | 'applied'
  | 'duplicate'
  | 'replay'
  | 'other'
  | 'redelivery'
  | 'commit'
  | 'crash'
  | 'restart';

const legend: ReadonlyArray<[GlyphKind, string]> = [
  ['call', 'model call'],
  ['rate-limited', '429'],
  ['pause', 'waiting after a 429'],
  ['attempt-failed', 'attempt failed'],
  ['parked', 'parked'],
  ['held', 'held'],
  ['applied', 'applied'],
  ['duplicate', 'redelivered, already applied'],
  ['replay', 'replay'],
  ['redelivery', 'redelivered'],
  ['lost-call', 'call lost to the crash'],
  ['commit', 'commit (offset)'],
  ['crash', 'crash'],
  ['restart', 'restart'],
];

/** One glyph at (x, y): y is the row's middle, or the top for the full-height lines; `width` for bars and lines. */
export function glyph(kind: GlyphKind, x: number, y: number, width: number, title: string): string {
  const t = `<title>${escapeXml(title)}</title>`;
  switch (kind) {
    case 'call':
      return `<rect x="${x}" y="${y - 5}" width="${width}" height="10" rx="2" fill="#3b6fd0">${t}</rect>`;
    case 'lost-call':
      return `<rect x="${x}" y="${y - 5}" width="${width}" height="10" rx="2" fill="#fff" stroke="#8a93a3" stroke-dasharray="3 2">${t}</rect>`;
    case 'rate-limited':
      return `<rect x="${x}" y="${y - 7}" width="${width}" height="14" fill="#d93025">${t}</rect>`;
    case 'pause':
      return `<line x1="${x}" x2="${x + width}" y1="${y}" y2="${y}" stroke="#e8910c" stroke-width="2" stroke-dasharray="4 3">${t}</line>`;
    case 'attempt-failed':
      return `<path d="M${x - 4} ${y - 4}L${x + 4} ${y + 4}M${x + 4} ${y - 4}L${x - 4} ${y + 4}" stroke="#e8910c" stroke-width="2.5">${t}</path>`;
    case 'parked':
      return `<rect x="${x - 5}" y="${y - 5}" width="10" height="10" fill="#7b3fb8">${t}</rect>`;
    case 'held':
      return `<path d="M${x} ${y - 6}L${x + 6} ${y}L${x} ${y + 6}L${x - 6} ${y}Z" fill="#8a93a3">${t}</path>`;
    case 'applied':
      return `<circle cx="${x}" cy="${y}" r="4.5" fill="#1e8e3e" stroke="#fff">${t}</circle>`;
    case 'duplicate':
      return `<circle cx="${x}" cy="${y}" r="4.5" fill="#fff" stroke="#0b8a8a" stroke-width="2">${t}</circle>`;
    case 'replay':
      return `<circle cx="${x}" cy="${y}" r="4.5" fill="#fff" stroke="#7b3fb8" stroke-width="2" stroke-dasharray="2 1.5">${t}</circle>`;
    case 'other':
      return `<circle cx="${x}" cy="${y}" r="3" fill="#1d2330">${t}</circle>`;
    case 'redelivery':
      return `<path d="M${x - 4} ${y - 9}L${x + 4} ${y - 9}L${x} ${y - 3}Z" fill="#b3261e">${t}</path>`;
    case 'commit':
      return `<path d="M${x} ${y - 7}L${x} ${y + 7}" stroke="#1f6f43" stroke-width="2.5">${t}</path>`;
    case 'crash':
      return `<line x1="${x}" x2="${x}" y1="${y}" y2="${y + width}" stroke="#b3261e" stroke-width="2">${t}</line>`;
    case 'restart':
      return `<line x1="${x}" x2="${x}" y1="${y}" y2="${y + width}" stroke="#1f6f43" stroke-width="2" stroke-dasharray="6 4">${t}</line>`;
  }
}

/** The legend: each glyph beside what it means. */
export function legendHtml(): string {
  const item = ([kind, text]: [GlyphKind, string]) => {
    const full = kind === 'crash' || kind === 'restart';
    const bar = kind === 'call' || kind === 'lost-call' || kind === 'pause';
    const svg = glyph(kind, bar ? 2 : 11, full ? 0 : 8, bar ? 18 : full ? 16 : kind === 'rate-limited' ? 3 : 0, text);
    return `<li><svg width="22" height="16" viewBox="0 0 22 16" aria-hidden="true">${svg}</svg>${escapeXml(text)}</li>`;
  };
  return `<ul class="legend">${legend.map(item).join('')}</ul>`;
}

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
