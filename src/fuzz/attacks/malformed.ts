/**
 * Malformed input: what a buggy client sends by accident. Garbage payloads,
 * wrong field types, unknown types, frames before `register`, bad length
 * prefixes, valid frames split at random byte boundaries, invalid UTF-8 in
 * small fields. The broker may close the offender (P03) but nobody else may
 * notice; the campaign's healthy sessions and health probe check that.
 */
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../protocol/constants.ts"
import { blob, spliceJson, mark } from "./blobs.ts"
import { type AttackKit, framed, registerFrame, roundTrip } from "./kit.ts"

const garbagePayloads: ReadonlyArray<string> = [
  "{nope",
  "",
  "[]",
  "\"register\"",
  "null",
  "42",
  "{}",
  "{\"type\":7}",
  "{\"type\":null}",
  "{\"type\":[\"list\"]}",
  "{\"type\":\"list\"",
  "{\"type\":\"list\",\"requestId\":\"x\"}}",
  "\u0000\u0001\u0002",
  "{\"type\":\"health\",\"requestId\":\"x\",\"requestId\":5}"
]

/** Valid types with fields of the wrong type or shape. */
const wrongFields: ReadonlyArray<string> = [
  "{\"type\":\"list\",\"requestId\":5}",
  "{\"type\":\"list\",\"requestId\":\"r\",\"limit\":0}",
  "{\"type\":\"list\",\"requestId\":\"r\",\"cursor\":\"-1\"}",
  "{\"type\":\"presence\",\"status\":5}",
  "{\"type\":\"presence\",\"contextPct\":1e400}",
  "{\"type\":\"presence\",\"contextTokens\":\"many\"}",
  "{\"type\":\"send\",\"to\":\"x\",\"message\":\"hi\"}",
  "{\"type\":\"send\",\"to\":5,\"message\":{\"id\":\"m\",\"timestamp\":1,\"content\":{\"text\":\"t\"}}}",
  "{\"type\":\"send\",\"to\":\"x\",\"message\":{\"id\":\"m\",\"timestamp\":1e400,\"content\":{\"text\":\"t\"}}}",
  "{\"type\":\"send\",\"to\":\"x\",\"message\":{\"id\":\"m\",\"timestamp\":1,\"content\":{\"text\":\"t\",\"attachments\":[{\"type\":\"zip\"}]}}}",
  "{\"type\":\"cancel_message\",\"messageId\":[\"m\"]}",
  "{\"type\":\"cancel_ask\",\"messageId\":{}}",
  "{\"type\":\"message_receipt\",\"receipt\":{\"messageId\":\"m\",\"status\":\"read\",\"timestamp\":1}}",
  "{\"type\":\"message_receipt\",\"receipt\":null}",
  "{\"type\":\"health\",\"requestId\":null}",
  "{\"type\":\"register\",\"session\":{\"cwd\":1}}",
  "{\"type\":\"register\",\"sessionId\":\"   \",\"session\":{\"cwd\":\"/\",\"model\":\"m\",\"pid\":1,\"startedAt\":1,\"lastActivity\":1}}",
  "{\"type\":\"register\",\"session\":{\"cwd\":\"/\",\"model\":\"m\",\"pid\":1e400,\"startedAt\":1,\"lastActivity\":1}}",
  "{\"type\":\"unregister\",\"extra\":{\"deep\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}}",
  "{\"type\":\"__proto__\"}",
  "{\"type\":\"constructor\"}",
  "{\"type\":\"hasOwnProperty\"}"
]

/** Frames only a registered session may send, sent first. */
const beforeRegister: ReadonlyArray<object> = [
  { type: "list", requestId: "r" },
  { type: "send", to: "x", message: { id: "m", timestamp: 1, content: { text: "hi" } } },
  { type: "presence", status: "idle" },
  { type: "cancel_message", messageId: "m" },
  { type: "cancel_ask", messageId: "m" },
  { type: "unregister" },
  { type: "message_receipt", receipt: { messageId: "m", status: "queued", timestamp: 1 } }
]

/** Garbage payloads, unregistered or registered first. */
export const garbage = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    if (kit.prng.chance(0.5)) yield* kit.register(conn)
    yield* kit.sendTexts(conn, [kit.prng.pick(garbagePayloads)])
    yield* roundTrip(kit, conn)
  })

/** Known frame types with wrong field types; a bad `send` is answered, the rest close the offender. */
export const wrongTypes = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    if (kit.prng.chance(0.8)) yield* kit.register(conn)
    const count = kit.prng.int(1, 8)
    for (let i = 0; i < count; i++) yield* kit.sendTexts(conn, [kit.prng.pick(wrongFields)])
    yield* roundTrip(kit, conn)
  })

/** Unknown frame types (with an odd character now and then). */
export const unknownType = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    if (kit.prng.chance(0.5)) yield* kit.register(conn)
    const type = kit.prng.pick(["bogus", "extension_publish", "LIST", "list ", "\u202elist", "héalth", "x".repeat(kit.prng.int(1, 4000))])
    yield* kit.send(conn, { type, requestId: "r" })
    yield* roundTrip(kit, conn)
  })

/** Frames other than `register`/`health` on a connection that has not registered (P10). */
export const beforeRegistration = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    yield* kit.send(conn, kit.prng.pick(beforeRegister))
    yield* roundTrip(kit, conn)
  })

/** A second `register` on a registered connection, or frames after `unregister`. */
export const registerTwice = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    const id = yield* kit.register(conn)
    if (id === undefined) return
    if (kit.prng.chance(0.5)) {
      yield* kit.send(conn, registerFrame(kit, { sessionId: `${kit.tag}-again` }))
    } else {
      yield* kit.send(conn, { type: "unregister" }, { type: "list", requestId: "after-unregister" })
    }
    yield* roundTrip(kit, conn)
  })

/** Length prefixes that lie: over the limit (with or without payload), or zero. */
export const badLength = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    if (kit.prng.chance(0.5)) yield* kit.register(conn)
    const header = Buffer.alloc(4)
    const choice = kit.prng.int(0, 3)
    const size = choice === 0 ? MAX_FRAME_BYTES + 1 : choice === 1 ? 0xffffffff : choice === 2 ? MAX_FRAME_BYTES + kit.prng.int(2, 1e6) : 0
    header.writeUInt32BE(size, 0)
    const payload = choice === 3 ? Buffer.alloc(0) : Buffer.alloc(kit.prng.int(0, 64), 0x20)
    yield* kit.sendBytes(conn, Buffer.concat([header, payload]))
    yield* roundTrip(kit, conn)
  })

/**
 * Valid frames cut at random byte boundaries and written in pieces, or
 * coalesced, then a round trip: the broker must understand them all.
 */
export const splitFrames = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    const registered = kit.prng.chance(0.5) ? yield* kit.register(conn) : undefined
    const frames: Array<Buffer> = []
    const count = kit.prng.int(1, 24)
    for (let i = 0; i < count; i++) {
      const frame = registered !== undefined && kit.prng.chance(0.5)
        ? { type: "list", requestId: `${kit.tag}-${i}` }
        : { type: "health", requestId: `${kit.tag}-${i}`, padding: "p".repeat(kit.prng.int(0, 2000)) }
      frames.push(framed(Buffer.from(JSON.stringify(frame), "utf8")))
    }
    const bytes = Buffer.concat(frames)
    let at = 0
    let pieces = 0
    while (at < bytes.length) {
      const size = kit.prng.chance(0.3) ? 1 : kit.prng.int(1, Math.max(1, bytes.length - at))
      yield* kit.sendBytes(conn, bytes.subarray(at, at + size), 0)
      at += size
      pieces++
    }
    kit.count(count)
    if (pieces > 0) yield* roundTrip(kit, conn)
  })

/** Invalid UTF-8 in small fields of valid frames (a name, a status, a message text). */
export const badUtf8 = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    const junk = Buffer.concat([Buffer.from([0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x90, 0x28, 0xbc, 0xed, 0xa0, 0x80]), blob("invalid-utf8", kit.prng.int(1, 64))])
    const register = registerFrame(kit, { name: mark(0) })
    yield* kit.sendBytes(conn, framed(spliceJson(register, [junk])))
    yield* kit.sendBytes(conn, framed(spliceJson({ type: "presence", status: mark(0) }, [junk])))
    const target = kit.prng.pick(kit.view.sessionIds)
    const send = { type: "send", to: target, message: { id: `${kit.tag}-u8`, timestamp: 1, content: { text: mark(0) } } }
    yield* kit.sendBytes(conn, framed(spliceJson(send, [junk])))
    yield* roundTrip(kit, conn)
  })
