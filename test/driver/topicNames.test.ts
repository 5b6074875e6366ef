import { afterEach, describe, expect, it } from 'vitest';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { decisionTopology, type Ev } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

const decide = async () => ({ action: 'refund' as const });

describe('the driver refuses a topic the topology does not use', () => {
  it('refuses an input topic other than the source, naming the source', () => {
    driver = new TopologyTestDriver(decisionTopology(decide));
    expect(() => driver!.createInputTopic<Ev>('event')).toThrow(
      "TopologyTestDriver.createInputTopic: the topology reads only 'events', not 'event'; use createInputTopic('events')",
    );
  });

  it('refuses an output topic the topology never writes, naming those it writes', () => {
    driver = new TopologyTestDriver(decisionTopology(decide));
    expect(() => driver!.createOutputTopic('ouput')).toThrow(
      "TopologyTestDriver.createOutputTopic: the topology never writes 'ouput'; it writes 'out', 'events.parked', 'events.dlq'",
    );
    // Reading the source back is no output either: the engine never writes it.
    expect(() => driver!.createOutputTopic('events')).toThrow(/never writes 'events'/);
  });

  it('gives the source and every topic the topology writes', async () => {
    driver = new TopologyTestDriver(decisionTopology(decide));
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
    await driver.runUntilIdle();
    expect(driver.createOutputTopic<{ id: string }>('out').readValuesToList()).toEqual([{ id: 'a1', action: 'refund' }]);
    for (const topic of ['events.parked', 'events.dlq']) expect(driver.createOutputTopic(topic).readRecordsToList()).toEqual([]);
  });
});
