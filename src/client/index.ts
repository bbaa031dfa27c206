export * from "./ClientConnection.ts"
export * from "./errors.ts"
export * from "./IntercomClient.ts"
export * from "./spawn.ts"
