/** One sample line of the text format: its metric name, labels and value. */
interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"';
const SAMPLE_LINE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*,?)?\\})? (\\S+)(?: -?\\d+)?$`);
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/**
 * Prometheus text exposition (format 0.0.4), checked line by line: a malformed line, a family
 * given twice, a sample of no declared family or a value that is no number throws. Then lookups.
 */
export function exposition(text: string) {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (line === '') continue;
    const fail = (why: string) => new Error(`invalid exposition, line ${i + 1} (${why}): ${line}`);
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      if (!name || !type || !TYPES.has(type)) throw fail('bad TYPE');
      if (types.has(name)) throw fail('family given twice');
      types.set(name, type);
      continue;
    }
    if (line.startsWith('#')) continue;
    const match = SAMPLE_LINE.exec(line);
    if (!match) throw fail('not a sample');
    const [, name, labelText, valueText] = match as unknown as [string, string, string | undefined, string];
    const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
    if (Number.isNaN(value) && valueText !== 'NaN') throw fail('value is no number');
    const family = [name, name.replace(/_(bucket|sum|count)$/, '')].find((n) => types.has(n));
    if (!family) throw fail('no TYPE declared for it');
    const labels: Record<string, string> = {};
    for (const pair of labelText?.matchAll(new RegExp(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"`, 'g')) ?? []) labels[pair[1]!] = pair[2]!;
    samples.push({ name, labels, value });
  }
  const select = (name: string, wanted: Record<string, string | number>) => {
    const family = name.replace(/_(bucket|sum|count)$/, '');
    if (!types.has(name) && !types.has(family)) throw new Error(`no metric ${name} in the exposition; it has ${[...types.keys()].join(', ')}`);
    return samples.filter((s) => s.name === name && Object.entries(wanted).every(([k, v]) => s.labels[k] === String(v)));
  };
  return {
    type: (name: string) => types.get(name),
    /** The sum of the values of `name`'s samples whose labels include `labels`. */
    sum: (name: string, labels: Record<string, string | number> = {}) => select(name, labels).reduce((total, s) => total + s.value, 0),
    /** The samples of `name` whose labels include `labels`. */
    samples: (name: string, labels: Record<string, string | number> = {}) => select(name, labels),
  };
}
