export * from "./Connection.ts"
export * from "./healthProbe.ts"
export * from "./UnixSocket.ts"
