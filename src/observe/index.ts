/**
 * `effect-intercom/observe`: the broker's live view (`observe-v1`) from a
 * client — `ObserveClient.snapshot` / `ObserveClient.watch`, the Schemas of
 * what they return, and `applyEvent` to keep one current snapshot.
 */
export * from "./ObserveClient.ts"
export * from "./Snapshot.ts"
