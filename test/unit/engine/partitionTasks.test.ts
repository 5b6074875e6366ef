import { describe, expect, it } from 'vitest';
import type { PartitionTask } from '../../../src/engine/partitionTask.js';
import { PartitionTasks } from '../../../src/engine/partitionTasks.js';

const task = (name: string) => ({ name }) as unknown as PartitionTask;

describe('PartitionTasks', () => {
  it('finds, replaces, counts and drops tasks by topic and partition', () => {
    const tasks = new PartitionTasks();
    const a0 = task('a0');
    const a10 = task('a10');
    const b1 = task('b1');
    tasks.set({ topic: 'a', partition: 10 }, a10);
    tasks.set({ topic: 'b', partition: 1 }, b1);
    tasks.set({ topic: 'a', partition: 0 }, a0);
    expect(tasks.size).toBe(3);
    expect(tasks.get({ topic: 'a', partition: 0 })).toBe(a0);
    expect(tasks.get({ topic: 'a', partition: 1 })).toBeUndefined();
    expect(tasks.get({ topic: 'c', partition: 0 })).toBeUndefined();
    expect([...tasks.values()]).toEqual([a0, a10, b1]);
    const again = task('a0 again');
    tasks.set({ topic: 'a', partition: 0 }, again);
    expect(tasks.size).toBe(3);
    tasks.delete({ topic: 'a', partition: 10 });
    tasks.delete({ topic: 'a', partition: 10 });
    tasks.delete({ topic: 'z', partition: 3 });
    expect(tasks.size).toBe(2);
    expect([...tasks.values()]).toEqual([again, b1]);
  });
});
