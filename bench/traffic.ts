/**
 * What the live view (`observe-v1`) adds to every routed send, measured in
 * isolation: `Traffic.routed` (two counters and one slot of the 200-entry
 * ring, written in place) called on the same sessions and message again and
 * again, against an empty loop of the same shape. Run:
 *
 *   node bench/traffic.ts [--calls N]
 *
 * Prints nanoseconds per call (median of 9 rounds). See docs/performance.md,
 * "The live view".
 */
import { Routed, SessionTraffic, Traffic, type TrafficMessage, type TrafficParty } from "../src/broker/Traffic.ts"
import { median } from "./stats.ts"

const callsArg = process.argv.indexOf("--calls")
const calls = callsArg < 0 ? 5_000_000 : Number(process.argv[callsArg + 1])

const party = (id: string, name: string): TrafficParty => ({ id, fields: { name }, traffic: new SessionTraffic(0) })
const sender = party("a", "alice")
const target = party("b", "bob")
const message: TrafficMessage = { id: "m1" }

const round = (record: boolean): number => {
  const traffic = new Traffic()
  const start = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) {
    if (record) traffic.routed(sender, message, target, target.id, target.fields.name, Routed.delivered, i)
  }
  return Number(process.hrtime.bigint() - start) / calls
}

const withRecord: Array<number> = []
const without: Array<number> = []
for (let r = 0; r < 9; r++) {
  without.push(round(false))
  withRecord.push(round(true))
}
const cost = median(withRecord) - median(without)
process.stdout.write(
  `Traffic.routed: ${median(withRecord).toFixed(1)} ns/call, empty loop ${median(without).toFixed(1)} ns/call, cost ${cost.toFixed(1)} ns per routed send (${calls} calls × 9 rounds)\n`
)
