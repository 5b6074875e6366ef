import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { jsonSchemaOf } from '../../../src/providers/jsonSchemaOf.js';

describe('jsonSchemaOf', () => {
  it("converts a Standard JSON Schema (zod 4) to what its validator accepts, without '$schema'", () => {
    const schema = jsonSchemaOf('openai', z.object({ action: z.enum(['a', 'b']), note: z.string().default('') }));
    expect(schema).not.toHaveProperty('$schema');
    expect(schema).toMatchObject({ type: 'object', properties: { action: { enum: ['a', 'b'] } }, required: ['action'] });
  });

  it('takes a JSON Schema object as it is', () => {
    const schema = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { id: { type: 'string' } } };
    expect(jsonSchemaOf('anthropic', schema)).toEqual({ type: 'object', properties: { id: { type: 'string' } } });
  });

  it('refuses a Standard Schema that cannot convert itself, naming what to pass', () => {
    const validateOnly = { '~standard': { version: 1, vendor: 'hand-made', validate: (value: unknown) => ({ value }) } };
    expect(() => jsonSchemaOf('ai-sdk', validateOnly as never)).toThrow(
      /ai-sdk: the schema given for the JSON mode \(vendor 'hand-made'\) cannot convert itself to JSON Schema; pass/,
    );
  });
});
