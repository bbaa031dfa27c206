/**
 * Forged input: frames that claim to be, or to act for, another session.
 * A `from` field in a send, replies to asks the attacker never got, receipts,
 * cancels and supersedes for other sessions' messages, and — the one a
 * careless client trips over by accident — sends, asks and mail whose
 * message ids collide with a healthy session's (the healthy sessions number
 * their messages, and the attacker is told the numbers). None of it may
 * reach, divert or cancel anything of the healthy sessions; their checks
 * (HealthyTraffic.ts) say when it does.
 */
import { Effect } from "effect"
import { type AttackKit, roundTrip } from "./kit.ts"

const message = (id: string, text: string, extra: Record<string, unknown> = {}) => ({
  id,
  timestamp: 1,
  content: { text },
  ...extra
})

/** A healthy id to collide with: an open ask, queued mail or a recent message, else a guess. */
const collidingId = (kit: AttackKit, prefer: "ask" | "mail" | "any"): string => {
  const asks = kit.view.openAsks()
  const queued = kit.view.queuedIds()
  const recent = kit.view.recentIds()
  if (prefer === "ask" && asks.length > 0) return kit.prng.pick(asks)
  if (prefer === "mail" && queued.length > 0) return kit.prng.pick(queued)
  if (recent.length > 0) return kit.prng.pick(recent)
  return `${kit.view.sessionIds[0] ?? "x"}-${kit.prng.int(1, 50)}`
}

/** A healthy session other than C (which may be away). */
const healthyTarget = (kit: AttackKit): string => kit.prng.pick(kit.view.sessionIds.slice(0, 2))

/** A send that carries a `from` (and other broker-only fields) claiming to be a healthy session. */
export const forgedFrom = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined || (yield* kit.register(conn)) === undefined) return
    const claimed = kit.view.sessionIds[0] ?? "x"
    const fake = { id: claimed, cwd: "/", model: "m", pid: 1, startedAt: 1, lastActivity: 1, trustedLocal: true }
    yield* kit.send(conn, {
      type: "send",
      to: healthyTarget(kit),
      from: fake,
      message: message(`${kit.tag}-from`, "I am healthy-a", { brokerReceivedAt: 1, from: fake }),
      session: fake
    })
    yield* roundTrip(kit, conn)
  })

/** A reply (`replyTo`) to a healthy ask the attacker never got, sent to the asker. */
export const forgedReply = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined || (yield* kit.register(conn)) === undefined) return
    const count = kit.prng.int(1, 16)
    for (let i = 0; i < count; i++) {
      const replyTo = collidingId(kit, "ask")
      const asker = kit.view.sessionIds.find((id) => replyTo.startsWith(`${id}-`)) ?? healthyTarget(kit)
      yield* kit.send(conn, { type: "send", to: asker, message: message(`${kit.tag}-r${i}`, "forged answer", { replyTo }) })
    }
    yield* roundTrip(kit, conn)
  })

/**
 * Sends, asks or mail under a healthy session's message id: to a healthy
 * session, to the attacker's own second session, or to a departed one (mail).
 */
export const collidingIds = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined || (yield* kit.register(conn, { sessionId: `${kit.tag}-x` })) === undefined) return
    const second = yield* kit.open("y")
    const secondId = second === undefined ? undefined : yield* kit.register(second, { sessionId: `${kit.tag}-y` })
    const departed = kit.prng.chance(0.4)
    if (departed && second !== undefined) {
      yield* kit.send(second, { type: "unregister" })
      yield* roundTrip(kit, second)
    }
    const count = kit.prng.int(1, 16)
    for (let i = 0; i < count; i++) {
      const mode = kit.prng.pick(["ask", "send", "mail"] as const)
      const id = collidingId(kit, mode === "ask" ? "ask" : mode === "mail" ? "mail" : "any")
      const to = mode === "mail" || secondId === undefined || kit.prng.chance(0.4) ? (secondId ?? healthyTarget(kit)) : healthyTarget(kit)
      const target = departed && mode !== "mail" && to === secondId ? healthyTarget(kit) : to
      yield* kit.send(conn, {
        type: "send",
        to: target,
        message: message(id, `colliding ${mode}`, mode === "ask" ? { expectsReply: true } : {})
      })
      // The receiver (the attacker's own second session) receipts the colliding message at once.
      if (second !== undefined && !departed && target === secondId && kit.prng.chance(0.5)) {
        yield* kit.send(second, { type: "message_receipt", receipt: { messageId: id, status: "acknowledged", timestamp: 1 } })
      }
    }
    yield* roundTrip(kit, conn)
  })

/** Receipts, cancels, ask cancels and supersedes for healthy messages the attacker had nothing to do with. */
export const foreignControl = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined || (yield* kit.register(conn)) === undefined) return
    const count = kit.prng.int(1, 24)
    for (let i = 0; i < count; i++) {
      const id = collidingId(kit, kit.prng.chance(0.5) ? "ask" : "any")
      switch (kit.prng.int(0, 3)) {
        case 0:
          yield* kit.send(conn, {
            type: "message_receipt",
            receipt: { messageId: id, status: kit.prng.pick(["acknowledged", "expired", "cancelled"]), timestamp: 1 }
          })
          break
        case 1:
          yield* kit.send(conn, { type: "cancel_message", messageId: id })
          break
        case 2:
          yield* kit.send(conn, { type: "cancel_ask", messageId: id })
          break
        default:
          yield* kit.send(conn, {
            type: "send",
            to: healthyTarget(kit),
            message: message(`${kit.tag}-s${i}`, "supersede", { supersedes: id })
          })
      }
    }
    yield* roundTrip(kit, conn)
  })

/** A session that takes a healthy session's name (not its id), and sends by name. */
export const nameSquat = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    const name = kit.prng.pick(kit.view.names)
    // Another cwd: a session with a healthy one's name *and* cwd is its mailbox identity and receives
    // its mail while it is away, by design (P49; docs/security.md, "Identity").
    if (conn === undefined || (yield* kit.register(conn, { name, session: { cwd: "/tmp/fuzz-squat" } })) === undefined) return
    yield* kit.send(
      conn,
      { type: "presence", name: kit.prng.pick(kit.view.names) },
      { type: "send", to: kit.prng.pick(kit.view.names), message: message(`${kit.tag}-n`, "by name") }
    )
    yield* roundTrip(kit, conn)
  })

/** A session in another scope (or none) reaching for the healthy sessions. */
export const scopeHop = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    const scopeId = kit.prng.pick(["", " ", `${kit.view.scopeId} `, `${kit.view.scopeId}-other`, "other"])
    if (conn === undefined || (yield* kit.register(conn, { scopeId })) === undefined) return
    yield* kit.send(conn, {
      type: "send",
      to: healthyTarget(kit),
      message: message(collidingId(kit, "any"), "from another scope", kit.prng.chance(0.5) ? { expectsReply: true } : {})
    })
    yield* kit.send(conn, { type: "cancel_message", messageId: collidingId(kit, "any") })
    yield* roundTrip(kit, conn)
  })
