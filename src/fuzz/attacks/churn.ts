/**
 * Churn and hoarding: what many connections, or one session that takes and
 * never gives back, do to everybody else. Connection storms; registrations
 * in fresh scopes; departed sessions with huge names followed by sends to
 * unknown targets (each a scan of every departed session); mail for departed
 * sessions; asks nobody answers; a session that never reads while another
 * fills its outbox. Health must stay prompt and memory bounded.
 */
import { Duration, Effect } from "effect"
import { MAX_ASK_TIMEOUT_MS, MAX_FRAME_BYTES } from "../../protocol/constants.ts"
import { blob, mark, spliceJson } from "./blobs.ts"
import { type AttackKit, framed, registerFrame, roundTrip } from "./kit.ts"

/** Many connections at once that send nothing (or one byte), held a moment, then dropped. */
export const connectStorm = (kit: AttackKit) =>
  Effect.gen(function*() {
    const count = Math.min(kit.heavy ? kit.prng.int(20, 300) : kit.prng.int(5, 40), Math.max(1, kit.framesLeft()))
    const hold = Duration.millis(kit.heavy ? kit.prng.int(0, 1500) : kit.prng.int(0, 200))
    const poke = kit.prng.chance(0.3)
    kit.count(count)
    yield* Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) =>
        Effect.gen(function*() {
          const conn = yield* kit.open(`s${i}`)
          if (conn !== undefined && poke) yield* conn.write(Buffer.from([0]))
        }),
      { concurrency: "unbounded", discard: true }
    )
    yield* Effect.sleep(hold)
  })

/** Register and leave, again and again, each time in a fresh scope (scopes the broker must not keep). */
export const registerChurn = (kit: AttackKit) =>
  Effect.gen(function*() {
    const count = kit.heavy ? kit.prng.int(5, 40) : kit.prng.int(2, 10)
    const conn = yield* kit.open()
    if (conn === undefined) return
    for (let i = 0; i < count && kit.framesLeft() > 0; i++) {
      const scopeId = kit.prng.chance(0.7) ? `${kit.tag}-scope-${i}` : kit.view.scopeId
      yield* kit.send(conn, registerFrame(kit, { sessionId: `${kit.tag}-${i}`, scopeId }))
      yield* kit.send(conn, { type: "unregister" })
    }
    yield* roundTrip(kit, conn)
  })

/**
 * Sessions with names of about a million characters register and leave (the
 * broker remembers departed sessions for a day), then sends to targets that
 * match nobody: each is resolved against every departed session.
 */
export const departedFlood = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    const departed = kit.heavy ? kit.prng.int(2, 8) : kit.prng.int(1, 3)
    const nameBytes = kit.heavy ? MAX_FRAME_BYTES - 1024 : kit.prng.int(1_000, 64_000)
    for (let i = 0; i < departed && kit.bytesLeft() > nameBytes; i++) {
      const frame = registerFrame(kit, { sessionId: `${kit.tag}-d${i}`, name: mark(0) })
      yield* kit.sendBytes(conn, framed(spliceJson(frame, [blob("ascii", nameBytes - i)])))
      yield* kit.send(conn, { type: "unregister" })
    }
    yield* kit.send(conn, registerFrame(kit, { sessionId: `${kit.tag}-s` }))
    const sends = Math.min(kit.heavy ? kit.prng.int(20, 200) : kit.prng.int(5, 40), Math.max(1, kit.framesLeft()))
    const frames = Array.from({ length: sends }, (_, i) =>
      JSON.stringify({ type: "send", to: `nobody-${kit.tag}-${i}`, message: { id: `${kit.tag}-u${i}`, timestamp: 1, content: { text: "?" } } }))
    yield* kit.sendTexts(conn, frames)
    yield* roundTrip(kit, conn)
  })

/** Mail for a departed session of the attacker's own, as much as the mailbox takes (and more). */
export const mailboxFlood = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open("x")
    const away = yield* kit.open("away")
    if (conn === undefined || away === undefined) return
    const sender = yield* kit.register(conn, { sessionId: `${kit.tag}-x` })
    const target = yield* kit.register(away, { sessionId: `${kit.tag}-away` })
    if (sender === undefined || target === undefined) return
    yield* kit.send(away, { type: "unregister" })
    yield* roundTrip(kit, away)
    const count = Math.min(kit.heavy ? kit.prng.int(20, 300) : kit.prng.int(5, 40), Math.max(1, kit.framesLeft()))
    const size = kit.heavy && kit.prng.chance(0.2) ? kit.prng.int(64_000, 900_000) : kit.prng.int(10, 8_000)
    for (let i = 0; i < count && kit.bytesLeft() > size; i++) {
      const frame = { type: "send", to: target, message: { id: `${kit.tag}-q${i}`, timestamp: 1, content: { text: mark(0) } } }
      yield* kit.sendBytes(conn, framed(spliceJson(frame, [blob("ascii", size)])))
    }
    yield* roundTrip(kit, conn)
  })

/** Asks to a live session that reads but never answers: the broker keeps every edge for its full timeout. */
export const askFlood = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open("x")
    const silent = yield* kit.open("silent")
    if (conn === undefined || silent === undefined) return
    yield* kit.register(conn, { sessionId: `${kit.tag}-x` })
    const target = yield* kit.register(silent, { sessionId: `${kit.tag}-silent` })
    if (target === undefined) return
    const count = Math.min(kit.heavy ? kit.prng.int(20, 500) : kit.prng.int(5, 50), Math.max(1, kit.framesLeft()))
    const frames = Array.from({ length: count }, (_, i) =>
      JSON.stringify({
        type: "send",
        to: target,
        askTimeoutMs: MAX_ASK_TIMEOUT_MS,
        message: { id: `${kit.tag}-a${i}-${"k".repeat(kit.prng.int(0, kit.heavy ? 2_000 : 200))}`, timestamp: 1, content: { text: "answer me" }, expectsReply: true }
      }))
    yield* kit.sendTexts(conn, frames)
    yield* roundTrip(kit, conn)
  })

/**
 * A session that stops reading while the attacker's other session sends it
 * big messages: the broker holds them for it until it reads — or closes.
 */
export const neverReads = (kit: AttackKit) =>
  kit.background(
    Effect.gen(function*() {
      const conn = yield* kit.open("x")
      const sink = yield* kit.open("sink")
      if (conn === undefined || sink === undefined) return
      yield* kit.register(conn, { sessionId: `${kit.tag}-x` })
      const target = yield* kit.register(sink, { sessionId: `${kit.tag}-sink` })
      if (target === undefined) return
      yield* sink.pause
      const size = kit.heavy ? kit.prng.int(64_000, MAX_FRAME_BYTES - 4096) : kit.prng.int(1_000, 64_000)
      const count = Math.min(kit.heavy ? kit.prng.int(4, 64) : kit.prng.int(2, 16), Math.max(1, Math.floor(kit.bytesLeft() / size)))
      const text = blob("ascii", size).toString("latin1")
      // Once the broker stops reading the sender (backpressure) its writes wait; the hold is bounded.
      for (let i = 0; i < count; i++) {
        yield* kit.send(conn, { type: "send", to: target, message: { id: `${kit.tag}-h${i}`, timestamp: 1, content: { text } } })
      }
      yield* roundTrip(kit, conn)
    }).pipe(Effect.timeoutOption(Duration.seconds(5)), Effect.asVoid)
  )
