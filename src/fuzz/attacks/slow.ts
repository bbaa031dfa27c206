/**
 * Slow input (slowloris): a connection that begins a frame and then sends it
 * a byte at a time, or not at all. Registered or not, it must be closed
 * within the promised bound (`partialFrameBoundMs`), or one process could
 * hold connections open forever. The drip runs in the background; the
 * campaign waits for it, and a connection still open past the bound (plus a
 * second of grace) is a finding — unless its close arrives within
 * LAG_ALLOWANCE_MS more: on a machine loaded past its cores, the broker's
 * stall check and this process's own timers both run late (a 2-core machine
 * running the whole suite beside a benchmark saw closes come after it), and a
 * late close is the machine's lag, not a connection the broker kept.
 */
import { Clock, Duration, Effect } from "effect"
import { type AttackKit, closedWithin } from "./kit.ts"

/** Grace on top of the bound before a stalled connection counts as kept. */
const GRACE_MS = 1_000

/** How much longer a close may come on an overloaded machine before the connection counts as kept. */
const LAG_ALLOWANCE_MS = 10_000

/** A frame begun and then dripped (or stalled), registered or not. */
export const slowDrip = (kit: AttackKit) =>
  kit.background(Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    const registered = kit.prng.chance(0.6) && (yield* kit.register(conn)) !== undefined
    const drip = kit.prng.chance(0.6)
    const interval = Duration.millis(kit.prng.int(100, 900))
    const payload = Buffer.from(JSON.stringify({ type: "health", requestId: `${kit.tag}-${"s".repeat(kit.prng.int(10, 4000))}` }), "utf8")
    const header = Buffer.alloc(4)
    // The frame claims more than will ever come: it never completes.
    header.writeUInt32BE(payload.length + kit.prng.int(1, 1000), 0)
    // At least one byte of the frame: a connection that has begun none is an idle session, never cut off.
    const lead = kit.prng.int(1, 4)
    const bound = kit.promises.partialFrameBoundMs + GRACE_MS
    const started = yield* Clock.currentTimeMillis
    yield* kit.sendBytes(conn, Buffer.concat([header.subarray(0, lead), lead === 4 ? payload.subarray(0, 1) : Buffer.alloc(0)]))
    let at = 0
    while (!conn.isClosed() && (yield* Clock.currentTimeMillis) - started <= bound) {
      if (drip) {
        const next = lead < 4 && at < 4 - lead ? header.subarray(lead + at, lead + at + 1) : payload.subarray(at, at + 1)
        yield* kit.sendBytes(conn, next, 0)
        at++
      }
      yield* closedWithin(conn, interval)
    }
    const open = !conn.isClosed() && !(yield* closedWithin(conn, LAG_ALLOWANCE_MS))
    kit.findings.check(!open, "slowloris-kept", () =>
      `a ${registered ? "registered" : "unregistered"} connection that ${drip ? "drips a byte every" : "stalled after part of a frame for"} ${
        drip ? Duration.format(interval) : `${bound} ms`
      } was still open after ${bound + LAG_ALLOWANCE_MS} ms (${kit.tag})`)
  }))
