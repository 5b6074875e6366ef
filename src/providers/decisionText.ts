/** The decision in a model's text answer, which JSON mode makes a JSON document. */
export function decisionFromText(provider: string, text: string | null | undefined): unknown {
  if (typeof text !== 'string' || text.trim() === '') {
    throw new Error(`${provider}: the model answered no text; expected a JSON decision (is JSON mode on, and max tokens enough?)`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${provider}: the model's answer is not JSON (${text.slice(0, 80)}); expected a JSON decision`, { cause: error });
  }
}
