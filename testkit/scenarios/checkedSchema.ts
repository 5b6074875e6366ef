import type { StandardSchemaV1 } from '@standard-schema/spec';

/**
 * A Standard Schema from a function that lists what is wrong with a value (nothing: it is a T).
 * The testkit's scenarios validate two small shapes; this keeps a schema library out of the
 * package's dependencies, and shows that any Standard Schema works as an agent step's schema.
 */
export function checkedSchema<T>(vendor: string, problemsOf: (value: unknown) => readonly string[]): StandardSchemaV1<unknown, T> {
  return {
    '~standard': {
      version: 1,
      vendor,
      validate(value) {
        const problems = problemsOf(value);
        return problems.length === 0 ? { value: value as T } : { issues: problems.map((message) => ({ message })) };
      },
    },
  };
}

/** The value as a plain object, or undefined when it is not one (null, an array, a string, ...). */
export function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
