/**
 * `list` pages are sized in UTF-8 bytes, not UTF-16 units (helper resultpages). Discovery closes a `sessions` page
 * before it passes 1 MiB, but it counted two things in units: the frame's own fields (its `requestId`, up to 256
 * units of three bytes each: 512 bytes short) and every SessionInfo of at most 341 units (a name of 150 "€" is 300
 * bytes short). A page filled to within a few hundred bytes of its budget then made a frame over 1 MiB, which the
 * writer's guard dropped: the list was never answered. Each test fills one scope so that the page the broker counts
 * lands 200 bytes under its budget — sessions with large fields, then one whose cwd is sized from a measured page —
 * and checks that the answer arrives, fits 1 MiB, and that following `nextCursor` reaches every session once, in
 * order. A `list` sent after it on the same connection (answered in order) is the barrier: an answer dropped is
 * missing at once. On a broker over the in-memory network under `patientClock` (steps carry megabytes); no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Encode from "../../src/broker/encode.ts"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { frameBytes } from "../../src/protocol/framing.ts"
import { MAX_NAME_LENGTH } from "../../src/protocol/limits.ts"
import { register } from "../support/broker.ts"
import { patientClock, withMemoryBroker } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

/** A request id at its longest, ASCII: the frames measured with one are as many bytes as the broker counts units. */
const ASCII_ID = "a".repeat(256)

/** A session with large fields: about 10 KB of SessionInfo, so about 105 fill a frame. */
const bigSession = (i: number) => ({
  sessionId: `big-${String(i).padStart(3, "0")}`,
  cwd: `/${"€".repeat(2500)}`,
  name: "€".repeat(MAX_NAME_LENGTH),
  model: "€".repeat(256),
  status: "€".repeat(256)
})

/** The last session's shape: its SessionInfo is as many bytes as `cwd` makes it (over 341 units either way). */
const lastSession = (sessionId: string, cwd: string) => ({ sessionId, cwd, model: "m".repeat(256) })

/** A cwd of `bytes` UTF-8 bytes: "/", then "€" (three bytes each), then ASCII. */
const cwdOfBytes = (bytes: number): string => {
  const threes = Math.floor((bytes - 1) / 3)
  return `/${"€".repeat(threes)}${"x".repeat(bytes - 1 - threes * 3)}`
}

/** The text of the one frame answering `requestId`, if `client` got one. */
const answerText = (client: WireClient, requestId: string): string | undefined =>
  client.receivedTexts().find((text) => text.includes(`"requestId":${JSON.stringify(requestId)}`))

/** Sends `list` (with `cursor`), then a fence `list`; returns the first one's text once the fence is answered. */
const listed = (client: WireClient, requestId: string, cursor?: string) =>
  Effect.gen(function*() {
    const fence = `fence-${client.count("sessions")}`
    yield* client.send({ type: "list", requestId, ...(cursor === undefined ? {} : { cursor }) })
    yield* client.send({ type: "list", requestId: fence, limit: 1 })
    yield* client.next("sessions", (frame) => frame.requestId === fence)
    return answerText(client, requestId)
  })

/** Bytes of a `sessions` page with no sessions, for `total` sessions and a request id as long as ASCII_ID. */
const emptyPageBytes = (total: number): number => frameBytes(Encode.sessionsPageFrame(ASCII_ID, [], total, undefined))

/**
 * Bytes the broker counts for a page's sessions (each SessionInfo, plus one a comma), from a measured page frame:
 * what the frame holds beyond its empty form. Exact when every SessionInfo's bytes are counted as bytes.
 */
const sessionBytesOf = (text: string, total: number): number => frameBytes(text) - emptyPageBytes(total) + 1

/** Bytes by which counting `info` in units falls short, when the old shortcut counted it so (at most 341 units). */
const shortfallOf = (info: string): number => info.length * 3 <= 1024 ? frameBytes(info) - info.length : 0

/**
 * A scope read by a `list-page-v1` reader and a base reader, holding large sessions, `smalls` sessions of short
 * SessionInfo in "€", a probe session, and last a session shaped as the probe but with its cwd sized so that the
 * sessions' bytes, less the units-count shortfall of the short ones, are 200 under the page's budget: the page the
 * broker counts holds them all, just. Sizes are measured from pages answered with an ASCII request id.
 */
const filledScope = (smalls: number) =>
  Effect.gen(function*() {
    const broker = yield* withMemoryBroker({ idleExit: null })
    const paged = yield* broker.connect("paged")
    const granted = yield* register(paged, { sessionId: "paged-reader", frame: { features: [LIST_PAGE_V1] } })
    assert.include(granted.features ?? [], LIST_PAGE_V1)
    const base = (yield* broker.session({ sessionId: "base-reader" })).client
    for (let i = 0; i < smalls; i++) {
      yield* broker.session({ sessionId: `small-${i}`, cwd: "/", model: "m", name: "€".repeat(150) })
    }
    const bigs = [(yield* broker.session(bigSession(0))).id]
    const one = yield* listed(paged, "1".repeat(256))
    if (one === undefined) return assert.fail("precondition: the measuring list is answered")
    // The large session's bytes, then how many more fill the page but 600 bytes and one large session.
    const bigBytes = frameBytes(JSON.stringify(JSON.parse(one).sessions[2 + smalls])) + 1
    const target = (total: number) => MAX_FRAME_BYTES - emptyPageBytes(total) - 200
    const more = Math.floor((target(3 + smalls) - sessionBytesOf(one, 3 + smalls) - 600) / bigBytes)
    for (let i = 1; i <= more; i++) bigs.push((yield* broker.session(bigSession(i))).id)
    yield* broker.session(lastSession("last-0", "/p"))
    const measured = yield* listed(paged, "2".repeat(256))
    if (measured === undefined) return assert.fail("precondition: the second measuring list is answered")
    const all = 5 + smalls + more
    assert.notInclude(measured, "nextCursor", "precondition: the measured scope is one page")
    const infos: ReadonlyArray<unknown> = JSON.parse(measured).sessions
    const shortfall = infos.map((info) => shortfallOf(JSON.stringify(info))).reduce((a, b) => a + b, 0)
    const probeBytes = frameBytes(JSON.stringify(infos[infos.length - 1])) + 1
    // The last session: the probe's shape, its cwd grown from 2 bytes so the counted bytes reach the target.
    const grow = target(all) + shortfall - sessionBytesOf(measured, all - 1) - probeBytes
    assert.isAtLeast(grow, 0, "precondition: room left for the last session")
    assert.isAtMost(grow + 2, 12_289, "precondition: the last session's cwd can take it")
    yield* broker.session(lastSession("last-1", cwdOfBytes(2 + grow)))
    const smallIds = Array.from({ length: smalls }, (_, i) => `small-${i}`)
    return { paged, base, ids: ["paged-reader", "base-reader", ...smallIds, ...bigs, "last-0", "last-1"], shortfall }
  })

/** Follows `nextCursor` from a first list with `requestId`: every page's text, each required to arrive. */
const allPages = (client: WireClient, requestId: string) =>
  Effect.gen(function*() {
    const pages: Array<string> = []
    let cursor: string | undefined
    do {
      const id = pages.length === 0 ? requestId : `${requestId.slice(0, 250)}-${pages.length}`
      const text = yield* listed(client, id, cursor)
      if (text === undefined) return assert.fail(`page ${pages.length + 1} (request id ${id.slice(0, 12)}…) was never written`)
      pages.push(text)
      cursor = JSON.parse(text).nextCursor
    } while (cursor !== undefined)
    return pages
  })

/** The ids of every page's sessions, in order, each page checked to fit 1 MiB. */
const idsOf = (pages: ReadonlyArray<string>): ReadonlyArray<string> =>
  pages.flatMap((text) => {
    assert.isAtMost(frameBytes(text), MAX_FRAME_BYTES)
    return (JSON.parse(text).sessions as ReadonlyArray<{ readonly id: string }>).map((info) => info.id)
  })

describe("a sessions page is sized in bytes", () => {
  it.effect("a request id of 256 \"€\" (512 bytes more than its units): the paged and the base list are answered under 1 MiB, and the pages reach every session once, in order", () =>
    patientClock(Effect.gen(function*() {
      const { paged, base, ids } = yield* filledScope(0)
      const euroId = "€".repeat(256)
      const pages = yield* allPages(paged, euroId)
      assert.isAbove(pages.length, 1)
      assert.deepStrictEqual(idsOf(pages), ids)
      const cut = yield* listed(base, euroId)
      if (cut === undefined) return assert.fail("the base list was never written")
      const baseIds = idsOf([cut])
      assert.deepStrictEqual(baseIds, ids.slice(0, baseIds.length))
      assert.isBelow(baseIds.length, ids.length)
    })), { timeout: 120_000 })

  it.effect("three sessions of short SessionInfo in \"€\" (each 300 bytes more than its units): the page is answered under 1 MiB, and the pages reach every session once, in order", () =>
    patientClock(Effect.gen(function*() {
      const { paged, ids, shortfall } = yield* filledScope(3)
      assert.isAbove(shortfall, 600, "precondition: the short sessions' bytes pass their units by over 600")
      const pages = yield* allPages(paged, "z".repeat(256))
      assert.isAbove(pages.length, 1)
      assert.deepStrictEqual(idsOf(pages), ids)
    })), { timeout: 120_000 })
})
