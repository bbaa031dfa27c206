/**
 * The broker's stall check (`Registration.closeStalledFrames`, every 2.5 s)
 * over N idle attached connections, in one process:
 *
 *   npx node --expose-gc bench/stall-check.ts [--peers N] [--calls N] [--reps N]
 *
 * Builds a Router and N peers, each on a real `SocketConnection` around an
 * unconnected `net.Socket` (idle: nothing read, nothing pending), attaches
 * them, then per rep: bytes the heap grew by over one check right after a
 * full collection (no collection runs inside one check at these sizes, so
 * it is what the check allocated), and the time per check over `--calls`
 * checks. Printed: the median of each over reps. A measurement, never a
 * test; not part of CI.
 */
import { Effect } from "effect"
import net from "node:net"
import { resolveCoreOptions } from "../src/broker/options.ts"
import { Peer } from "../src/broker/Peer.ts"
import { PeerReader } from "../src/broker/PeerReader.ts"
import { PeerWriter } from "../src/broker/PeerWriter.ts"
import { makeRouterSignals, Router } from "../src/broker/Router.ts"
import { socketConnection } from "../src/transport/SocketConnection.ts"
import { eachArg } from "./args.ts"
import { median } from "./stats.ts"

const USAGE = "usage: node --expose-gc bench/stall-check.ts [--peers N] [--calls N] [--reps N]"
let PEERS = 10_000
let CALLS = 2_000
let REPS = 7
eachArg(process.argv.slice(2), USAGE, (arg) => {
  if (arg.key === "--peers") PEERS = arg.int(1, 1_000_000)
  else if (arg.key === "--calls") CALLS = arg.int(1, 1_000_000)
  else if (arg.key === "--reps") REPS = arg.int(1, 100)
  else throw new Error(`unknown argument ${arg.raw}\n${USAGE}`)
})

const collect: unknown = Reflect.get(globalThis, "gc")
if (typeof collect !== "function") throw new Error(`run with --expose-gc\n${USAGE}`)
const gc = () => Reflect.apply(collect, undefined, [])

const router = Effect.runSync(Effect.gen(function*() {
  const signals = yield* makeRouterSignals(false)
  return new Router(resolveCoreOptions({ idleExit: null, maxSessions: PEERS + 10 }), () => 0, signals)
}))
const fork = () => {
  throw new Error("the stall check forks nothing")
}
const permit = { release: () => {} }
for (let i = 0; i < PEERS; i++) {
  const connection = socketConnection(new net.Socket(), { id: i + 1 })
  router.attach(new Peer(
    connection,
    0,
    (peer) => new PeerReader(router, peer, permit, fork),
    (peer) => new PeerWriter(router, peer, fork)
  ))
}

const check = () => router.registration.closeStalledFrames(2_500)
const allocated: Array<number> = []
const perCall: Array<number> = []
for (let rep = 0; rep < REPS; rep++) {
  for (let i = 0; i < 200; i++) check()
  gc()
  const before = process.memoryUsage().heapUsed
  check()
  allocated.push(process.memoryUsage().heapUsed - before)
  const started = process.hrtime.bigint()
  for (let i = 0; i < CALLS; i++) check()
  perCall.push(Number(process.hrtime.bigint() - started) / CALLS)
}
console.log(`peers ${PEERS}, ${REPS} reps of ${CALLS} checks`)
console.log(`heap grown over one check: ${Math.round(median(allocated)).toLocaleString("en-US")} bytes`)
console.log(`time per check: ${(median(perCall) / 1000).toFixed(1)} µs`)
process.exit(0)
