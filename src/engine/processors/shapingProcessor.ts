import type { KeyedSerialNode, ParkNode } from '../../graph/nodes.js';
import type { Processor, ProcessorFactory } from './processor.js';

const NOTHING: Processor = { process: () => undefined };

/**
 * keyedSerial and park shape the scheduling (the partition's window) and the parking (the step
 * before them), not the value: their processors let the event through.
 */
export const shapingProcessor: ProcessorFactory<KeyedSerialNode | ParkNode> = () => NOTHING;
