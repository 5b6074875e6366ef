/**
 * The `server.properties` of a combined broker+controller node (KRaft), and
 * the cluster id that `kafka.tools.StorageTool format` writes.
 */
import { randomBytes } from "node:crypto";
import type { NodeLayout } from "./layout.js";

/** A random Kafka cluster id: 16 bytes in base64url, never starting with '-'. */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}

/** The KRaft quorum setting: a static voter list for several nodes, dynamic bootstrap for one. */
function quorumProperties(node: NodeLayout, all: readonly NodeLayout[]): Record<string, string> {
  if (all.length === 1) {
    return { "controller.quorum.bootstrap.servers": `127.0.0.1:${node.controllerPort}` };
  }
  const voters = all.map((n) => `${n.id}@127.0.0.1:${n.controllerPort}`).join(",");
  return { "controller.quorum.voters": voters };
}

/**
 * Replication of the internal topics: 3 with min.isr 2 on three or more
 * nodes (one node may die and writes with acks=all still succeed), else as
 * many replicas as there are nodes and min.isr 1.
 */
function replicationProperties(nodeCount: number): Record<string, string> {
  const replicas = String(Math.min(nodeCount, 3));
  const minIsr = nodeCount >= 3 ? "2" : "1";
  return {
    "default.replication.factor": replicas,
    "min.insync.replicas": minIsr,
    "offsets.topic.replication.factor": replicas,
    "transaction.state.log.replication.factor": replicas,
    "transaction.state.log.min.isr": minIsr,
    "share.coordinator.state.topic.replication.factor": replicas,
    "share.coordinator.state.topic.min.isr": minIsr,
  };
}

/** Renders `server.properties` for `node` of the cluster `all`. */
export function serverProperties(node: NodeLayout, all: readonly NodeLayout[]): string {
  const properties: Record<string, string> = {
    "process.roles": "broker,controller",
    "node.id": String(node.id),
    ...quorumProperties(node, all),
    listeners: `PLAINTEXT://127.0.0.1:${node.port},CONTROLLER://127.0.0.1:${node.controllerPort}`,
    "advertised.listeners": `PLAINTEXT://127.0.0.1:${node.port}`,
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "log.dirs": node.dataDir,
    "num.partitions": "1",
    ...replicationProperties(all.length),
    // Fewer partitions for the internal topics than the default 50: the first
    // consumer group and the first transaction start sooner.
    "offsets.topic.num.partitions": "10",
    "transaction.state.log.num.partitions": "10",
    // Tests want the first rebalance at once, not after the default 3 s.
    "group.initial.rebalance.delay.ms": "0",
  };
  const lines = Object.entries(properties).map(([key, value]) => `${key}=${value}`);
  return `# Written by tools/kafka/broker.ts; rewritten on every start.\n${lines.join("\n")}\n`;
}
