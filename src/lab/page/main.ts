import './shims/setImmediate.js';
import { runWorkedExampleTimeline } from '../../../testkit/scenarios/workedExample.js';
import { parseWorkedExampleSettings, workedExampleQuery, type WorkedExampleSettings } from '../../../testkit/scenarios/workedExampleSettings.js';
import { commitPlaceholder, controlsHtml, formQuery } from './controls.js';
import { figuresHtml } from './figures.js';
import { timelineHtml } from './timeline.js';

const main = document.querySelector('main')!;
const form = document.querySelector<HTMLFormElement>('#settings')!;
const status = document.querySelector<HTMLElement>('#status')!;
const timeline = document.querySelector<HTMLElement>('#timeline')!;
const figures = document.querySelector<HTMLElement>('#figures')!;
let latest = 0;

/** Runs the worked example with these settings and draws it; a newer run makes an older one's drawing moot. */
async function run(settings: WorkedExampleSettings): Promise<void> {
  const id = ++latest;
  main.dataset.state = 'running';
  status.textContent = 'running…';
  const started = performance.now();
  try {
    const { result, timeline: marks } = await runWorkedExampleTimeline(settings);
    if (id !== latest) return;
    timeline.innerHTML = timelineHtml(marks);
    figures.innerHTML = figuresHtml(result);
    status.textContent = `${settings.variant}: ${result.events} events, ran and drawn in ${Math.round(performance.now() - started)} ms of this browser's time`;
    main.dataset.state = 'done';
  } catch (error) {
    if (id !== latest) return;
    fail(error);
  }
}

function fail(error: unknown): void {
  main.dataset.state = 'error';
  status.textContent = error instanceof Error ? error.message : String(error);
}

form.addEventListener('submit', (event) => event.preventDefault());
form.addEventListener('change', () => {
  let settings: WorkedExampleSettings;
  try {
    settings = parseWorkedExampleSettings(formQuery(form));
  } catch (error) {
    return fail(error);
  }
  form.querySelector<HTMLInputElement>('input[name="commit"]')!.placeholder = commitPlaceholder(settings.variant);
  history.replaceState(null, '', `?${workedExampleQuery(settings)}`);
  void run(settings);
});

try {
  const settings = parseWorkedExampleSettings(new URLSearchParams(location.search));
  form.innerHTML = controlsHtml(settings);
  void run(settings);
} catch (error) {
  form.innerHTML = controlsHtml(parseWorkedExampleSettings(new URLSearchParams()));
  fail(error);
}
