import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { effect } from '../../../src/dsl/effect.js';
import { stream } from '../../../src/dsl/stream.js';
import { TopologyError } from '../../../src/dsl/topologyError.js';
import { validateTopology } from '../../../src/dsl/validateTopology.js';

interface Dispute {
  readonly id: string;
  readonly amount: number;
}

const Decision = z.object({ action: z.enum(['refund', 'reject']) });
const decide = async () => ({ action: 'refund' as const });
const effects = effect('dispute-effects', (v: unknown) => v);

/** Runs `build` and returns the TopologyError it throws; fails the test if it throws nothing else. */
function refusal(build: () => unknown): TopologyError {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(TopologyError);
    return error as TopologyError;
  }
  throw new Error('expected a TopologyError, but the topology was accepted');
}

describe('a valid topology', () => {
  it('builds the disputes chain and keeps its operators in order', () => {
    const topology = stream<Dispute>('disputes')
      .keyedSerial({ maxInFlight: 3 })
      .agentStep('decide', decide, { schema: Decision })
      .park({ attempts: 3 })
      .applyOnce(effects)
      .to('dispute-decisions')
      .build();
    expect(topology.nodes.map((n) => `${n.kind}:${n.name}`)).toEqual([
      'source:disputes-source',
      'keyedSerial:disputes-keyed-serial',
      'agentStep:decide',
      'park:decide-park',
      'applyOnce:dispute-effects',
      'sink:dispute-decisions-sink',
    ]);
    expect(topology.maxInFlight).toBe(3);
    expect(topology.park?.topic).toBe('disputes.parked');
    expect(topology.outputTopics).toEqual(['dispute-decisions', 'disputes.parked', 'disputes.dlq']);
  });

  it('builds a chain with no agent step and no stateful operator', () => {
    const topology = stream<Dispute>('disputes')
      .filter((d) => d.amount > 0)
      .mapValues((d) => d.id)
      .to('ids')
      .build();
    expect(topology.agentStep).toBeUndefined();
    expect(topology.maxInFlight).toBe(1);
  });
});

describe('refusals at build time', () => {
  it('refuses an agentStep with no keyedSerial upstream, naming the step and the fix', () => {
    const error = refusal(() => stream<Dispute>('disputes').agentStep('decide', decide, { schema: Decision }).park({ attempts: 3 }).applyOnce(effects).build());
    expect(error.operator).toBe('decide');
    expect(error.message).toContain("agentStep 'decide'");
    expect(error.message).toContain('needs keyedSerial() upstream');
    expect(error.message).toContain('add .keyedSerial({ maxInFlight: N }) before it');
  });

  it('refuses a keyedSerial that comes after the agentStep', () => {
    const error = refusal(() => stream<Dispute>('disputes').agentStep('decide', decide).park({ attempts: 3 }).keyedSerial().applyOnce(effects).build());
    expect(error.message).toContain("agentStep 'decide' needs keyedSerial() upstream");
  });

  it('refuses a park with no step before it, naming the park and the fix', () => {
    const error = refusal(() => stream<Dispute>('disputes').keyedSerial().park({ attempts: 3 }).applyOnce(effects).build());
    expect(error.operator).toBe('disputes-park');
    expect(error.message).toContain("park 'disputes-park'");
    expect(error.message).toContain('no step before it can fail');
    expect(error.message).toContain('put .park() right after .agentStep()');
  });

  it('refuses a park that does not follow its step directly', () => {
    const error = refusal(() =>
      stream<Dispute>('disputes')
        .keyedSerial()
        .agentStep('decide', decide)
        .mapValues((v) => v, { name: 'unwrap' })
        .park({ attempts: 3 })
        .applyOnce(effects)
        .build(),
    );
    expect(error.operator).toBe('decide-park');
    expect(error.message).toContain("park 'decide-park': it must follow its agentStep directly, but follows mapValues 'unwrap'");
    expect(error.message).toContain('put .park() right after .agentStep()');
  });

  it('refuses an agentStep with no park after it, naming the step and the fix', () => {
    const error = refusal(() => stream<Dispute>('disputes').keyedSerial().agentStep('decide', decide).applyOnce(effects).build());
    expect(error.operator).toBe('decide');
    expect(error.message).toContain("agentStep 'decide' has no park() right after it");
    expect(error.message).toContain('add .park({ attempts: 3 })');
  });

  it('refuses an agentStep whose decision is never applied, naming the step and the fix', () => {
    const error = refusal(() => stream<Dispute>('disputes').keyedSerial().agentStep('decide', decide).park({ attempts: 3 }).to('decisions').build());
    expect(error.operator).toBe('decide');
    expect(error.message).toContain("agentStep 'decide': its decision is never applied");
    expect(error.message).toContain('add .applyOnce(effect) after its park()');
  });

  it.each([
    [0, '0'],
    [1.5, '1.5'],
    [-1, '-1'],
    [Number.NaN, 'NaN'],
    [Infinity, 'Infinity'],
    [-0, '-0'],
    ['2', '"2"'],
  ])('refuses keyedSerial maxInFlight %s, naming the operator, the valid range and the value as given', (maxInFlight, shown) => {
    const error = refusal(() => stream<Dispute>('disputes').keyedSerial({ maxInFlight: maxInFlight as number }));
    expect(error.operator).toBe('keyedSerial');
    expect(error.message).toBe(`keyedSerial: maxInFlight must be a whole number of at least 1, got ${shown}`);
  });

  it.each([
    [{ retryDelayMs: Number.NaN }, 'retryDelayMs must be a number at least 0, got NaN'],
    [{ retryDelayMs: -Infinity }, 'retryDelayMs must be a number at least 0, got -Infinity'],
    [{ retryJitter: Infinity }, 'retryJitter must be a number between 0 and 1, got Infinity'],
    [{ attempts: undefined }, 'attempts must be a whole number of at least 1, got undefined'],
    [{ topic: 'a topic' }, `topic must be a non-empty string of letters, digits, '.', '_' or '-', got "a topic"`],
    [{ onExhausted: 'drop' }, `onExhausted must be one of 'park', 'dlq', 'skip', 'fail', got "drop"`],
    [{ onExhausted: Number.NaN }, `onExhausted must be one of 'park', 'dlq', 'skip', 'fail', got NaN`],
  ])("prints a park option's value as given (%o)", (options, message) => {
    const error = refusal(() =>
      stream<Dispute>('disputes')
        .keyedSerial()
        .agentStep('decide', decide)
        .park({ attempts: 3, ...options } as never),
    );
    expect(error.message).toBe(`park after 'decide': ${message}`);
  });

  it.each([0, 2.5, -3])('refuses park attempts %s, naming the park after its step and the valid range', (attempts) => {
    const error = refusal(() => stream<Dispute>('disputes').keyedSerial().agentStep('decide', decide).park({ attempts }));
    expect(error.operator).toBe("park after 'decide'");
    expect(error.message).toBe(`park after 'decide': attempts must be a whole number of at least 1, got ${attempts}`);
  });

  it('refuses a park with no attempts at all', () => {
    const error = refusal(() =>
      stream<Dispute>('disputes')
        .keyedSerial()
        .agentStep('decide', decide)
        .park({} as unknown as { attempts: number }),
    );
    expect(error.message).toContain("park after 'decide': attempts must be a whole number of at least 1");
  });

  it('refuses two operators with one name, naming the name and the fix', () => {
    const error = refusal(() =>
      stream<Dispute>('disputes')
        .filter((d) => d.amount > 0, { name: 'decide' })
        .keyedSerial()
        .agentStep('decide', decide)
        .park({ attempts: 3 })
        .applyOnce(effects)
        .build(),
    );
    expect(error.operator).toBe('decide');
    expect(error.message).toContain("two operators are named 'decide'");
    expect(error.message).toContain('give one of them another name');
  });

  it('refuses two filters with one explicit name', () => {
    const error = refusal(() =>
      stream<Dispute>('disputes')
        .filter(() => true, { name: 'keep' })
        .filter(() => true, { name: 'keep' })
        .build(),
    );
    expect(error.message).toBe(
      "filter 'keep': two operators are named 'keep': this one and an earlier filter; names key state and metrics, so give one of them another name (.filter(fn, { name: '...' }) names the filter)",
    );
  });

  it("refuses an effect named as a park's default name, naming the park, that its name is the default, and both fixes", () => {
    const error = refusal(() =>
      stream<Dispute>('disputes')
        .keyedSerial()
        .agentStep('assess', decide)
        .park({ attempts: 3 })
        .applyOnce(effect('assess-park', (v: unknown) => v))
        .build(),
    );
    expect(error.operator).toBe('assess-park');
    expect(error.message).toBe(
      "applyOnce 'assess-park': two operators are named 'assess-park': this one and the park of agentStep 'assess' (its default name, <step>-park); " +
        "names key state and metrics, so give one of them another name (.park({ ..., name: '...' }) names the park; effect('...', apply) or .applyOnce(effect, { name: '...' }) names the applyOnce)",
    );
  });

  it('refuses an operator named as the source, naming the source and only the fix that applies', () => {
    const error = refusal(() =>
      stream<Dispute>('disputes')
        .filter(() => true, { name: 'disputes-source' })
        .build(),
    );
    expect(error.message).toBe(
      "filter 'disputes-source': two operators are named 'disputes-source': this one and the source of topic 'disputes' (its default name, <topic>-source); names key state and metrics, so give one of them another name (.filter(fn, { name: '...' }) names the filter)",
    );
  });

  it.each([
    ['an empty object', {}],
    ['a zod-like object without ~standard', { parse: () => ({}) }],
    ['a ~standard with no validate', { '~standard': { version: 1, vendor: 'x' } }],
    ['a string', 'Decision'],
  ])('refuses a bad schema object (%s), naming the step and what it must be', (_what, schema) => {
    const error = refusal(() =>
      stream<Dispute>('disputes')
        .keyedSerial()
        .agentStep('decide', decide, { schema: schema as never }),
    );
    expect(error.operator).toBe("agentStep 'decide'");
    expect(error.message).toBe("agentStep 'decide': schema must be a Standard Schema (zod, valibot, arktype, ...)");
  });

  it.each([-1, -0.5, Number.NEGATIVE_INFINITY])('refuses retryDelayMs %s, naming the park and the valid range', (retryDelayMs) => {
    const error = refusal(() => stream<Dispute>('disputes').keyedSerial().agentStep('decide', decide).park({ attempts: 3, retryDelayMs }));
    expect(error.operator).toBe("park after 'decide'");
    expect(error.message).toContain("park after 'decide': retryDelayMs must be a number at least 0");
  });

  it('refuses a retryJitter outside [0, 1]', () => {
    const error = refusal(() => stream<Dispute>('disputes').keyedSerial().agentStep('decide', decide).park({ attempts: 3, retryJitter: 1.5 }));
    expect(error.message).toBe("park after 'decide': retryJitter must be a number between 0 and 1, got 1.5");
  });

  it('refuses a declared limit of 0 calls', () => {
    const error = refusal(() =>
      stream<Dispute>('disputes')
        .keyedSerial()
        .agentStep('decide', decide, { limit: { calls: 0, windowMs: 1000 } }),
    );
    expect(error.operator).toBe("agentStep 'decide'");
    expect(error.message).toBe("agentStep 'decide': limit.calls must be a whole number of at least 1, got 0");
  });

  it.each([
    [
      'keyedSerial',
      () => stream<Dispute>('disputes').keyedSerial({ maxInFlite: 4 } as never),
      "keyedSerial: unknown option 'maxInFlite' (did you mean 'maxInFlight'?); its options are maxInFlight, name",
    ],
    [
      'park',
      () =>
        stream<Dispute>('disputes')
          .keyedSerial()
          .agentStep('decide', decide)
          .park({ attempts: 3, retryDelay: 500 } as never),
      "park after 'decide': unknown option 'retryDelay' (did you mean 'retryDelayMs'?); its options are attempts, retryDelayMs, retryJitter, topic, onExhausted, name",
    ],
    [
      'a limit',
      () =>
        stream<Dispute>('disputes')
          .keyedSerial()
          .agentStep('decide', decide, { limit: { calls: 5, windowMs: 1_000, limt: 3 } as never }),
      "agentStep 'decide': unknown option 'limit.limt'; its options are limit.calls, limit.tokens, limit.windowMs, limit.expectedTokens",
    ],
    [
      'agentStep',
      () =>
        stream<Dispute>('disputes')
          .keyedSerial()
          .agentStep('decide', decide, { Schema: Decision } as never),
      "agentStep 'decide': unknown option 'Schema' (did you mean 'schema'?); its options are schema, limit, timeoutMs",
    ],
    [
      'stream',
      () => stream<Dispute>('disputes', { deadLetter: 'disputes.dead' } as never),
      "stream 'disputes': unknown option 'deadLetter' (did you mean 'deadLetterTopic'?); its options are value, deadLetterTopic, effectId",
    ],
    ['a non-object', () => stream<Dispute>('disputes').keyedSerial(4 as never), 'keyedSerial: its options must be an object, got 4'],
    [
      'effect()',
      () => effect('fx', (v: unknown) => v, { timeoutMS: 5_000 } as never),
      "effect 'fx': unknown option 'timeoutMS' (did you mean 'timeoutMs'?); its options are timeoutMs",
    ],
  ])('refuses an unknown option of %s (a typo in plain JavaScript would be ignored), naming it and the nearest', (_what, build, message) => {
    expect(refusal(build).message).toBe(message);
  });

  it('takes several agent steps, each with its own park (sharing the default parking topic)', () => {
    const topology = stream<Dispute>('disputes')
      .keyedSerial()
      .agentStep('first', decide)
      .park({ attempts: 1 })
      .agentStep('second', decide)
      .park({ attempts: 2 })
      .applyOnce(effects)
      .build();
    expect(topology.agentSteps.map((s) => s.name)).toEqual(['first', 'second']);
    expect(topology.parkAfter('second')?.attempts).toBe(2);
    expect(topology.outputTopics).toContain('disputes.parked');
  });

  it('refuses a second agent step without its own park, naming it', () => {
    const error = refusal(() =>
      stream<Dispute>('disputes').keyedSerial().agentStep('first', decide).park({ attempts: 1 }).agentStep('second', decide).applyOnce(effects).build(),
    );
    expect(error.operator).toBe('second');
    expect(error.message).toBe(
      "agentStep 'second' has no park() right after it: a decision that keeps failing would have nowhere to go; add .park({ attempts: 3 })",
    );
  });

  it('refuses an effect not made with effect(), even one shaped like it', () => {
    for (const fake of [{ name: 'x' }, { name: 'x', apply: (v: unknown) => v }]) {
      const error = refusal(() => stream<Dispute>('disputes').applyOnce(fake as never));
      expect(error.operator).toBe('applyOnce');
      expect(error.message).toBe('applyOnce: effect must be made with effect(name, apply), got an object not made by effect()');
    }
  });

  it('refuses a plain function (every function has .apply), saying how to wrap it', () => {
    function recordDecision(v: unknown) {
      return v;
    }
    const named = refusal(() => stream<Dispute>('disputes').applyOnce(recordDecision as never));
    expect(named.operator).toBe('applyOnce');
    expect(named.message).toBe(
      "applyOnce: got the function 'recordDecision', not an effect; wrap it: .applyOnce(effect('a-stable-name', fn)) (the name keys its state)",
    );
    const arrow = refusal(() => stream<Dispute>('disputes').applyOnce(((v: unknown) => v) as never));
    expect(arrow.message).toBe("applyOnce: got the function, not an effect; wrap it: .applyOnce(effect('a-stable-name', fn)) (the name keys its state)");
  });

  it('refuses an effect with no name or no function, naming effect()', () => {
    expect(() => effect('', (v: unknown) => v)).toThrow(TopologyError);
    expect(() => effect('', (v: unknown) => v)).toThrow("effect: its name must be a non-empty string of letters, digits, '.', '_' or '-', got \"\"");
    expect(() => effect('fx', undefined as never)).toThrow("effect 'fx': apply must be a function, got undefined");
  });

  it.each([
    [
      'keyedSerial',
      () => stream<Dispute>('disputes').keyedSerial().keyedSerial().build(),
      "keyedSerial 'disputes-keyed-serial': a topology has at most one keyedSerial in this version; remove one of the 2",
    ],
    [
      'park',
      () => stream<Dispute>('disputes').keyedSerial().agentStep('decide', decide).park({ attempts: 3 }).park({ attempts: 2 }).applyOnce(effects).build(),
      "park 'decide-park': agentStep 'decide' already has its park; remove one of the 2",
    ],
    [
      'applyOnce',
      () => stream<Dispute>('disputes').keyedSerial().agentStep('decide', decide).park({ attempts: 3 }).applyOnce(effects).applyOnce(effects).build(),
      "applyOnce 'dispute-effects': a topology has at most one applyOnce in this version; remove one of the 2",
    ],
    [
      'to',
      () => stream<Dispute>('disputes').to('copies').to('copies').build(),
      "to 'copies-sink': the topology already writes its outputs to 'copies' (copies-sink); remove one of the two to('copies')",
    ],
  ])('refuses a duplicate %s with "remove one", not "rename"', (_kind, build, message) => {
    const error = refusal(build);
    expect(error.message).toBe(message);
    expect(error.message).not.toContain('another name');
  });
});

describe('refusals of topics that would loop or mix', () => {
  const chain = (source: string, options: { dlq?: string; park?: string; out?: string } = {}) =>
    stream<Dispute>(source, options.dlq ? { deadLetterTopic: options.dlq } : {})
      .keyedSerial()
      .agentStep('decide', decide)
      .park({ attempts: 3, ...(options.park ? { topic: options.park } : {}) })
      .applyOnce(effects)
      .to(options.out ?? 'dispute-decisions')
      .build();

  it('refuses a dead-letter topic equal to the source (one bad payload would loop forever)', () => {
    const error = refusal(() => chain('disputes', { dlq: 'disputes' }));
    expect(error.operator).toBe('disputes-source');
    expect(error.message).toBe(
      "stream 'disputes': its dead-letter topic is the source topic 'disputes': every record it writes would be read again, and written again, forever; give another stream(topic, { deadLetterTopic: '...' })",
    );
  });

  it('refuses a park topic equal to the source', () => {
    const error = refusal(() => chain('disputes', { park: 'disputes' }));
    expect(error.operator).toBe('decide-park');
    expect(error.message).toBe(
      "park 'decide-park': its park topic is the source topic 'disputes': every record it writes would be read again, and written again, forever; give another park({ topic: '...' })",
    );
  });

  it('refuses an output topic equal to the source', () => {
    const error = refusal(() => chain('disputes', { out: 'disputes' }));
    expect(error.operator).toBe('disputes-sink');
    expect(error.message).toBe(
      "to 'disputes-sink': its output topic is the source topic 'disputes': every record it writes would be read again, and written again, forever; give to() another topic",
    );
  });

  it('refuses a park topic equal to the dead-letter topic', () => {
    const error = refusal(() => chain('disputes', { dlq: 'disputes.bad', park: 'disputes.bad' }));
    expect(error.message).toBe(
      "park 'decide-park': its park topic 'disputes.bad' is also the dead-letter topic of stream 'disputes': readers could not tell the records apart; give another park({ topic: '...' })",
    );
  });

  it('refuses an output topic equal to the park or the dead-letter topic', () => {
    expect(refusal(() => chain('disputes', { out: 'disputes.parked' })).message).toBe(
      "to 'disputes.parked-sink': its output topic 'disputes.parked' is also the park topic of park 'decide-park': readers could not tell the records apart; give to() another topic",
    );
    expect(refusal(() => chain('disputes', { out: 'disputes.dlq' })).message).toContain(
      "its output topic 'disputes.dlq' is also the dead-letter topic of stream 'disputes'",
    );
  });

  it('accepts a topic set that all differ', () => {
    expect(chain('disputes', { dlq: 'bad-disputes', park: 'parked-disputes', out: 'decisions' }).outputTopics).toEqual([
      'decisions',
      'parked-disputes',
      'bad-disputes',
    ]);
  });

  it('refuses a bad topic name', () => {
    const error = refusal(() => stream<Dispute>('my disputes'));
    expect(error.operator).toBe('stream');
    expect(error.message).toContain('stream: topic must be a non-empty string');
  });

  it('refuses a decide that is not a function', () => {
    const error = refusal(() =>
      stream<Dispute>('disputes')
        .keyedSerial()
        .agentStep('decide', 'model' as never),
    );
    expect(error.message).toBe("agentStep 'decide': decide must be a function, got string");
  });
});

describe('validateTopology over raw nodes', () => {
  it('accepts what the builder builds and refuses the same chain without its keyedSerial', () => {
    const topology = stream<Dispute>('disputes').keyedSerial().agentStep('decide', decide).park({ attempts: 2 }).applyOnce(effects).build();
    expect(() => validateTopology(topology.nodes)).not.toThrow();
    const withoutSerial = topology.nodes.filter((n) => n.kind !== 'keyedSerial');
    expect(() => validateTopology(withoutSerial)).toThrow(/agentStep 'decide' needs keyedSerial\(\) upstream/);
  });
});

describe('respond()', () => {
  const chain = () => stream<Dispute>('disputes').keyedSerial().agentStep('decide', decide, { schema: Decision }).park({ attempts: 3 }).applyOnce(effects);

  it('adds the response and status topics to the outputs, the status topic named after the source unless given', () => {
    expect(chain().respond('answers').build().outputTopics).toEqual(['disputes.parked', 'disputes.dlq', 'answers', 'disputes.status']);
    expect(chain().respond('answers', { statusTopic: 'progress' }).build().respond).toMatchObject({ topic: 'answers', statusTopic: 'progress' });
  });

  it('refuses a respond() with no agentStep before it', () => {
    const error = refusal(() => stream<Dispute>('disputes').respond('answers').build());
    expect(error.message).toBe(
      "respond 'answers-respond': no agentStep before it, so there is no job to answer; put .respond(topic) after .agentStep(...).park(...).applyOnce(...)",
    );
  });

  it('refuses a status topic that is also another topic of the topology', () => {
    const error = refusal(() => chain().to('out').respond('answers', { statusTopic: 'out' }).build());
    expect(error.message).toBe(
      "respond 'answers-respond': its status topic 'out' is also the output topic of to 'out-sink': readers could not tell the records apart; give another respond(topic, { statusTopic: '...' })",
    );
  });

  it('refuses two respond()', () => {
    const error = refusal(() => chain().respond('a').respond('b').build());
    expect(error.message).toMatch(/^respond 'b-respond': a topology has at most one respond/);
  });
});

describe('route, shadow and fallback', () => {
  const keyed = () => stream<Dispute>('disputes').keyedSerial({ maxInFlight: 2 });
  const stepped = () => keyed().agentStep('decide', decide, { schema: Decision }).park({ attempts: 3 });
  const rule = (d: Dispute) => (d.amount < 10 ? { action: 'refund' as const } : undefined);
  const handler = () => ({ action: 'reject' as const });

  it('builds route, shadow and fallback chains, with the shadow topic among the outputs and every operator in describe()', () => {
    const shadowed = keyed()
      .route('small', rule)
      .agentStep('decide', decide, { schema: Decision })
      .park({ attempts: 3 })
      .shadow('legacy', handler)
      .applyOnce(effects)
      .build();
    expect(shadowed.nodes.map((n) => `${n.kind}:${n.name}`)).toEqual([
      'source:disputes-source',
      'keyedSerial:disputes-keyed-serial',
      'route:small',
      'agentStep:decide',
      'park:decide-park',
      'shadow:legacy',
      'applyOnce:dispute-effects',
    ]);
    expect(shadowed.outputTopics).toEqual(['disputes.parked', 'disputes.dlq', 'disputes.shadow']);
    expect(shadowed.describe()).toContain('Processor: legacy (stores: [], step: decide, topic: disputes.shadow)');
    const guarded = stepped().fallback('rules', handler, { afterMs: 30_000 }).applyOnce(effects).build();
    expect(guarded.describe()).toContain('Processor: rules (stores: [], step: decide, afterMs: 30000, halfOpenAfterMs: 30000)');
  });

  it('refuses a route with no agentStep right after it', () => {
    const error = refusal(() =>
      keyed()
        .route('small', rule)
        .filter(() => true)
        .agentStep('decide', decide)
        .park({ attempts: 3 })
        .applyOnce(effects)
        .build(),
    );
    expect(error.message).toBe(
      "route 'small': it must come right before the agentStep it decides for, but is followed by filter 'filter-1'; put .route(name, rule) right before .agentStep(name, decide)",
    );
    expect(refusal(() => keyed().route('small', rule).build()).message).toMatch(/^route 'small': no agentStep follows it/);
  });

  it('refuses a shadow or a fallback with no agent step, or anywhere but right after its park', () => {
    expect(refusal(() => keyed().shadow('legacy', handler as never)).message).toBe(
      "shadow 'legacy': no agentStep before it, so there is no agent step it runs in shadow; put .shadow() right after .agentStep(name, decide).park({ attempts })",
    );
    expect(
      refusal(() =>
        stepped()
          .applyOnce(effects)
          .fallback('rules', handler as never, { afterMs: 1_000 }),
      ).message,
    ).toBe(
      "fallback 'rules': it must come right after the park() of agentStep 'decide', but follows applyOnce 'dispute-effects'; put .fallback() right after .agentStep(...).park(...)",
    );
  });

  it('refuses two fallbacks, or a shadow and a fallback, for one step', () => {
    const twice = refusal(() => stepped().fallback('a', handler, { afterMs: 1_000 }).fallback('b', handler, { afterMs: 1_000 }));
    expect(twice.message).toBe("fallback 'b': agentStep 'decide' already has fallback 'a'; remove one of the 2");
    const both = refusal(() => stepped().shadow('legacy', handler).fallback('rules', handler, { afterMs: 1_000 }));
    expect(both.message).toMatch(/^fallback 'rules': agentStep 'decide' already has shadow 'legacy', and a step runs either in shadow/);
  });

  it('refuses a fallback without afterMs, a shadow topic that is the source, and a negative maxWaitMs', () => {
    expect(refusal(() => stepped().fallback('rules', handler, {} as never)).message).toBe(
      "fallback 'rules': afterMs must be a whole number of at least 1, got undefined",
    );
    const error = refusal(() => stepped().shadow('legacy', handler, { topic: 'disputes' }).applyOnce(effects).build());
    expect(error.message).toMatch(/^shadow 'legacy': its shadow topic is the source topic 'disputes'/);
    expect(refusal(() => stepped().shadow('legacy', handler, { maxWaitMs: -1 })).message).toBe(
      "shadow 'legacy': maxWaitMs must be a whole number of at least 0, got -1",
    );
  });
});
