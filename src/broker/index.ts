export * from "./Broker.ts"
export * from "./runBroker.ts"
export * from "./errors.ts"
export * from "./options.ts"
