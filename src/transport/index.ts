export * from "./Connection.ts"
export * from "./healthProbe.ts"
export * from "./InMemory.ts"
export * from "./UnixSocket.ts"
