/**
 * Oversized input: fields near and over every limit, in the flavours that
 * grow on their way back out (invalid UTF-8 comes back three times larger).
 * Big registrations and presence (re-broadcast to the whole scope), receipt
 * details (forwarded to the sender), request ids (echoed in the answer),
 * message ids (echoed in acks, kept in the broker's tables), whole messages,
 * and big records held while the healthy sessions list. Every frame the
 * broker writes back, to anyone, must stay within 1 MiB.
 */
import { Duration, Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../protocol/constants.ts"
import { frameOfType } from "../RawConnection.ts"
import { blob, mark, nearLimit, pickFlavour, spliceJson } from "./blobs.ts"
import { type AttackKit, framed, registerFrame, roundTrip, SHORT_WAIT } from "./kit.ts"

/** Room for the rest of a frame around one big field. */
const ROOM = 1024

/**
 * A blob size for this run, within what the attacker may still send;
 * undefined when too little is left. Light runs stay under LIGHT_MAX, which
 * is still enough for invalid UTF-8 to come back over 1 MiB.
 */
const sizeFor = (kit: AttackKit, min: number, max: number): number | undefined => {
  const size = Math.min(nearLimit(kit.prng, min, kit.heavy ? max : Math.min(max, LIGHT_MAX)), kit.bytesLeft())
  return size < min ? undefined : size
}

/** The largest blob of a light run: 0xFF × 360,000 comes back as 1,080,000 bytes. */
const LIGHT_MAX = 360_000

const IDENTITY_FIELDS = ["cwd", "name", "model", "status", "tmuxPane"] as const

/** A registration with one field near the frame limit; the session stays a moment, then leaves or vanishes. */
export const bigRegister = (kit: AttackKit) =>
  Effect.gen(function*() {
    const size = sizeFor(kit, 16_384, MAX_FRAME_BYTES - ROOM)
    const conn = yield* kit.open()
    if (size === undefined || conn === undefined) return
    const field = kit.prng.pick(IDENTITY_FIELDS)
    const frame = registerFrame(kit, field === "name" ? { name: mark(0) } : { session: { [field]: mark(0) } })
    yield* kit.sendBytes(conn, framed(spliceJson(frame, [blob(pickFlavour(kit.prng), size)])))
    yield* conn.next("registered", frameOfType("registered"), SHORT_WAIT).pipe(Effect.ignore)
    if (kit.prng.chance(0.5)) yield* kit.send(conn, { type: "list", requestId: `${kit.tag}-l` })
    if (kit.prng.chance(0.5)) yield* kit.send(conn, { type: "unregister" })
    yield* roundTrip(kit, conn)
  })

/** Presence updates that grow the session's record one big field at a time (they add up). */
export const bigPresence = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined || (yield* kit.register(conn)) === undefined) return
    const fields = ["name", "status", "model"] as const
    const count = kit.prng.int(1, 3)
    for (let i = 0; i < count; i++) {
      const size = sizeFor(kit, 16_384, MAX_FRAME_BYTES - ROOM)
      if (size === undefined) break
      const field = fields[i % fields.length] ?? "status"
      yield* kit.sendBytes(conn, framed(spliceJson({ type: "presence", [field]: mark(0) }, [blob(pickFlavour(kit.prng), size)])))
    }
    yield* roundTrip(kit, conn)
  })

/** A receipt with a big `detail`, forwarded to the message's sender (the attacker's other session). */
export const bigReceipt = (kit: AttackKit) =>
  Effect.gen(function*() {
    const sender = yield* kit.open("sender")
    const receiver = yield* kit.open("receiver")
    if (sender === undefined || receiver === undefined) return
    const senderId = yield* kit.register(sender, { sessionId: `${kit.tag}-s` })
    const receiverId = yield* kit.register(receiver, { sessionId: `${kit.tag}-r` })
    const size = sizeFor(kit, 16_384, MAX_FRAME_BYTES - ROOM)
    if (senderId === undefined || receiverId === undefined || size === undefined) return
    const messageId = `${kit.tag}-m`
    yield* kit.send(sender, { type: "send", to: receiverId, message: { id: messageId, timestamp: 1, content: { text: "receipt me" } } })
    const got = yield* Effect.result(receiver.next("message", frameOfType("message"), SHORT_WAIT))
    if (got._tag === "Failure") return
    const receipt = { type: "message_receipt", receipt: { messageId, status: "acknowledged", timestamp: 1, detail: mark(0) } }
    yield* kit.sendBytes(receiver, framed(spliceJson(receipt, [blob(pickFlavour(kit.prng), size)])))
    yield* roundTrip(kit, receiver)
    yield* roundTrip(kit, sender)
  })

/** `health`, `list` or `cancel_message` with a big id, which the answer echoes. */
export const bigEcho = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    const size = sizeFor(kit, 16_384, MAX_FRAME_BYTES - ROOM)
    if (conn === undefined || size === undefined) return
    const kind = kit.prng.pick(["health", "list", "cancel_message"] as const)
    if (kind !== "health" && (yield* kit.register(conn)) === undefined) return
    const frame = kind === "cancel_message" ? { type: kind, messageId: mark(0) } : { type: kind, requestId: mark(0) }
    yield* kit.sendBytes(conn, framed(spliceJson(frame, [blob(pickFlavour(kit.prng), size)])))
    yield* roundTrip(kit, conn)
  })

/** A message near the limit (text or attachments), to a healthy session or the attacker's own. */
export const bigMessage = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    const size = sizeFor(kit, 16_384, MAX_FRAME_BYTES - ROOM)
    if (conn === undefined || size === undefined || (yield* kit.register(conn)) === undefined) return
    const to = kit.prng.pick(kit.view.sessionIds.slice(0, 2))
    const attach = kit.prng.chance(0.3)
    const content = attach
      ? { text: "see attachment", attachments: [{ type: "file", name: mark(1), content: mark(0) }] }
      : { text: mark(0) }
    const frame = { type: "send", to, message: { id: `${kit.tag}-big`, timestamp: 1, content } }
    yield* kit.sendBytes(conn, framed(spliceJson(frame, [blob(pickFlavour(kit.prng), size), blob("ascii", 64)])))
    yield* roundTrip(kit, conn)
  })

/**
 * Big message ids: echoed in acks and answers, and kept by the broker as
 * keys (replay records, receipt routes, ask edges, mailbox).
 */
export const bigId = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open("x")
    const peer = yield* kit.open("y")
    if (conn === undefined || peer === undefined) return
    const from = yield* kit.register(conn, { sessionId: `${kit.tag}-x` })
    const to = yield* kit.register(peer, { sessionId: `${kit.tag}-y` })
    if (from === undefined || to === undefined) return
    const count = kit.prng.int(1, 3)
    for (let i = 0; i < count; i++) {
      const size = sizeFor(kit, 4_096, Math.floor((MAX_FRAME_BYTES - ROOM) / 2))
      if (size === undefined) break
      const ask = kit.prng.chance(0.5)
      const frame = { type: "send", to, message: { id: mark(0), timestamp: 1, content: { text: "big id" }, ...(ask ? { expectsReply: true } : {}) } }
      yield* kit.sendBytes(conn, framed(spliceJson(frame, [blob(pickFlavour(kit.prng), size)])))
    }
    yield* roundTrip(kit, conn)
    if (kit.prng.chance(0.5)) yield* kit.send(peer, { type: "unregister" })
  })

/** The most extensions and features a registration may carry, each as long as it may be. */
export const manyExtensions = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    const extensions = Array.from({ length: 32 }, (_, i) => ({ namespace: `${String(i).padStart(2, "0")}${"n".repeat(62)}`, ownerEligible: true }))
    const features = Array.from({ length: 64 }, (_, i) => `feature-${i}-${"f".repeat(kit.prng.int(0, kit.heavy ? 12_000 : 300))}`)
    yield* kit.register(conn, { session: { extensions }, features })
    yield* roundTrip(kit, conn)
  })

/**
 * Several sessions with big (but valid) records, held a while (the run
 * waits) so that the healthy sessions' lists meet them — and C, coming back
 * meanwhile, registers after them: a `sessions` frame that must fit 1 MiB
 * must still name every healthy session.
 */
export const bigRecords = (kit: AttackKit) =>
  Effect.gen(function*() {
    const count = kit.prng.int(3, 4)
    const hold = Duration.millis(kit.heavy ? kit.prng.int(1000, 3000) : kit.prng.int(300, 1000))
    // Together they must outgrow one frame; if the budget does not allow that, nothing is done.
    const size = kit.prng.int(360_000, 480_000)
    if (count * size > kit.bytesUnspent()) return
    for (let i = 0; i < count; i++) {
      const conn = yield* kit.open(`r${i}`)
      if (conn === undefined) return
      const frame = registerFrame(kit, { sessionId: `${kit.tag}-r${i}`, session: { cwd: mark(0) } })
      yield* kit.sendBytes(conn, framed(spliceJson(frame, [blob("ascii", size)])))
    }
    yield* Effect.sleep(hold)
  })
