import type { StandardJSONSchemaV1 } from '@standard-schema/spec';

/** A decision's shape for a provider's JSON mode: a schema that converts itself (zod 4, …) or a JSON Schema. */
export type DecisionSchema = StandardJSONSchemaV1 | Readonly<Record<string, unknown>>;

/**
 * The JSON Schema (draft 2020-12) that the model's answer must follow: what the step's schema
 * accepts as input, since the step validates the answer. `$schema` is left out, as providers'
 * structured-output modes take the schema object alone.
 */
export function jsonSchemaOf(provider: string, schema: DecisionSchema): Record<string, unknown> {
  const standard = (schema as Partial<StandardJSONSchemaV1>)['~standard'];
  if (standard === undefined) return withoutDollarSchema(schema as Record<string, unknown>);
  if (typeof standard.jsonSchema?.input !== 'function') {
    throw new TypeError(
      `${provider}: the schema given for the JSON mode (vendor '${standard.vendor}') cannot convert itself to JSON Schema; ` +
        'pass a Standard JSON Schema (zod 4, arktype, valibot with its converter) or a JSON Schema object',
    );
  }
  try {
    return withoutDollarSchema(standard.jsonSchema.input({ target: 'draft-2020-12' }));
  } catch (error) {
    throw new TypeError(`${provider}: the schema given for the JSON mode failed to convert to JSON Schema; pass a JSON Schema object instead`, {
      cause: error,
    });
  }
}

function withoutDollarSchema(schema: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { $schema: _, ...rest } = schema;
  return rest;
}
