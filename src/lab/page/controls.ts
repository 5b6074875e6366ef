import {
  numericSettingRanges,
  variantCommit,
  workedExampleVariants,
  type WorkedExampleSettings,
  type WorkedExampleVariant,
} from '../../../testkit/scenarios/workedExampleSettings.js';
import { escapeXml } from './glyphs.js';

// The order the controls appear in: the fixture, the model, the step, the commit and the crash.
const order = [
  'partitions',
  'eventsPerPartition',
  'keysPerPartition',
  'poisonEvents',
  'maxInFlight',
  'callsPerWindow',
  'windowMs',
  'latencyMs',
  'attempts',
  'retryDelayMs',
  'commit',
  'crashAtMs',
  'restartAfterMs',
  'seed',
] as const;

/** A control for every setting, showing `settings`; the variant first. */
export function controlsHtml(settings: WorkedExampleSettings): string {
  const variant = `<label>variant<select name="variant">${workedExampleVariants.map((v) => `<option${v === settings.variant ? ' selected' : ''}>${v}</option>`).join('')}</select></label>`;
  const fields = order.map((name) => {
    if (name === 'commit') {
      const value = settings.commit === undefined ? '' : String(settings.commit);
      return `<label>commit: each, or every N ms<input name="commit" list="commit-choices" value="${escapeXml(value)}" placeholder="${commitPlaceholder(settings.variant)}"/><datalist id="commit-choices"><option>each</option><option>1000</option><option>5000</option></datalist></label>`;
    }
    const range = numericSettingRanges[name];
    return `<label>${escapeXml(range.label)}<input name="${name}" type="number" min="${range.min}" max="${range.max}" step="1" value="${settings[name]}"/></label>`;
  });
  return [variant, ...fields].join('');
}

/** What the commit control shows when empty: the variant's own commit. */
export function commitPlaceholder(variant: WorkedExampleVariant): string {
  return `${variantCommit(variant)} (the variant's)`;
}

/** The form's values as a URL query, to be read by parseWorkedExampleSettings. */
export function formQuery(form: HTMLFormElement): URLSearchParams {
  const query = new URLSearchParams();
  for (const [name, value] of new FormData(form)) if (typeof value === 'string' && value.trim() !== '') query.set(name, value.trim());
  return query;
}
