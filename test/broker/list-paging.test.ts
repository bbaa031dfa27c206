/**
 * `list` past one 1 MiB frame: a base client gets the sessions that fit (the
 * base protocol has one frame); a client granted `list-page-v1` pages through
 * all of them. Real sockets, sessions with large fields so few fill a frame.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { MAX_CWD_LENGTH, MAX_MODEL_LENGTH, MAX_NAME_LENGTH, MAX_STATUS_LENGTH } from "../../src/protocol/limits.ts"
import { frameBytes } from "../../src/protocol/framing.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import { register, withBroker } from "../support/broker.ts"
import type { WireClient } from "../support/wire.ts"

/** 260 sessions with every identity field at its limit: about 1.3 MB of SessionInfo, more than one frame holds. */
const BIG = 260
const bigCwd = (i: number) => `/work/${String(i).padStart(3, "0")}/${"d".repeat(MAX_CWD_LENGTH - 10)}`
const bigFields = { name: "n".repeat(MAX_NAME_LENGTH), model: "m".repeat(MAX_MODEL_LENGTH), status: "s".repeat(MAX_STATUS_LENGTH) }

/** Reads every page: `list` with the previous page's cursor until none is given. */
const listAllPages = (client: WireClient) =>
  Effect.gen(function*() {
    const pages: Array<{ readonly sessions: ReadonlyArray<SessionInfo>; readonly total: number | undefined }> = []
    let cursor: string | undefined
    do {
      const requestId = `page-${pages.length}`
      yield* client.send({ type: "list", requestId, ...(cursor === undefined ? {} : { cursor }) })
      const page = yield* client.next("sessions", (frame) => frame.requestId === requestId)
      pages.push({ sessions: page.sessions, total: page.total })
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return pages
  })

describe("list beyond one frame", () => {
  it.live("a base client's list is cut to one frame; a list-page-v1 client pages through every session in order", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const ids: Array<string> = []
      for (let i = 0; i < BIG; i++) {
        const session = yield* broker.session({ sessionId: `big-${i}`, cwd: bigCwd(i), session: { ...bigFields, name: `${i}`.padEnd(MAX_NAME_LENGTH, "n") } })
        ids.push(session.id)
      }
      const base = yield* broker.session({ sessionId: "base-reader" })
      const paged = yield* broker.connect("paged-reader")
      const granted = yield* register(paged, { sessionId: "paged-reader", frame: { features: [LIST_PAGE_V1] } })
      assert.include(granted.features ?? [], LIST_PAGE_V1)

      yield* base.client.send({ type: "list", requestId: "base" })
      const cut = yield* base.client.next("sessions", (frame) => frame.requestId === "base")
      assert.isBelow(cut.sessions.length, BIG)
      assert.isAbove(cut.sessions.length, 0)
      assert.isUndefined(cut.total)
      assert.isUndefined(cut.nextCursor)
      assert.deepStrictEqual(cut.sessions.map((s) => s.id), ids.slice(0, cut.sessions.length))

      const pages = yield* listAllPages(paged)
      assert.isAbove(pages.length, 1)
      const all = pages.flatMap((page) => page.sessions.map((s) => s.id))
      assert.deepStrictEqual(all, [...ids, "base-reader", "paged-reader"])
      for (const page of pages) assert.strictEqual(page.total, BIG + 2)
    }), { timeout: 90_000 }) // 22 s on a quiet 2-core machine, over 30 s loaded: every join goes to every live session

  it.live("each page fits one frame, honours `limit`, and sessions that join or leave between pages are handled", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const reader = yield* broker.connect("reader")
      yield* register(reader, { sessionId: "reader", frame: { features: [LIST_PAGE_V1] } })
      const others = []
      for (let i = 0; i < 6; i++) others.push(yield* broker.session({ sessionId: `s-${i}` }))

      yield* reader.send({ type: "list", requestId: "p1", limit: 3 })
      const first = yield* reader.next("sessions", (frame) => frame.requestId === "p1")
      assert.deepStrictEqual(first.sessions.map((s) => s.id), ["reader", "s-0", "s-1"])
      assert.strictEqual(first.total, 7)
      assert.isString(first.nextCursor)
      assert.isAtMost(frameBytes(JSON.stringify(first)), MAX_FRAME_BYTES)

      // s-1 (the page's last) and s-3 leave, s-new joins: the next page starts after s-1's place.
      yield* others[1]!.client.destroy
      yield* others[3]!.client.destroy
      // Barrier: the reader has seen both leave, so the broker has removed them.
      yield* reader.next("session_left", (frame) => frame.sessionId === "s-1")
      yield* reader.next("session_left", (frame) => frame.sessionId === "s-3")
      yield* broker.session({ sessionId: "s-new" })
      yield* reader.send({ type: "list", requestId: "p2", cursor: first.nextCursor })
      const rest = yield* reader.next("sessions", (frame) => frame.requestId === "p2")
      assert.deepStrictEqual(rest.sessions.map((s) => s.id), ["s-2", "s-4", "s-5", "s-new"])
      assert.isUndefined(rest.nextCursor)
    }))

  it.live("a cursor the broker never sent is a protocol error (the connection is closed)", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const reader = yield* broker.connect("reader")
      yield* register(reader, { sessionId: "reader", frame: { features: [LIST_PAGE_V1] } })
      yield* reader.send({ type: "list", requestId: "bad", cursor: "not-a-cursor" })
      yield* reader.waitClosed()
    }))
})
