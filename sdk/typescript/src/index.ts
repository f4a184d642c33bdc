/** meshmq client SDK for Node.js: see README.md. */
export { connect, Connection, ConnectOptions, FailoverEventType, NodeInfo, TopologyMember } from "./connection";
export { Session, ProducerOptions, QueueOptions, BrowsedMessage, PROTOCOL_VERSION } from "./session";
export { Producer, BodySource } from "./producer";
export { TemporaryQueue } from "./temporary_queue";
export { Consumer, ConsumerOptions, ReceiveOptions, ReceivedMessage } from "./consumer";
export { Double, Properties, PropertyValue, RoutingType, SendOptions } from "./message";
export { ClientOptions, DEFAULT_OPTIONS } from "./options";
export { parseUri, ParsedURI, Server } from "./uri";
export {
  LoadBalancingPolicy, RoundRobinPolicy, RandomPolicy, RandomStickyPolicy, FirstElementPolicy, policyFromName,
} from "./loadbalance";
export * from "./errors";
export const VERSION = "0.1.0";
