export * from "./Broker.ts"
export * from "./BrokerCore.ts"
export * from "./errors.ts"
export * from "./options.ts"
