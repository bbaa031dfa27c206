/**
 * `result_listed` and `result_page` (`results-v1`) at their worst fit one frame (helper resultpages). A listing page
 * holds at most MAX_LIST_LIMIT (50) summaries, and every field of a summary is bounded: the author's id and name and
 * the group (256 units each), `run` and `child` (256), `title` (MAX_TITLE_LENGTH, 1,024). Each unit is at most six
 * bytes as JSON text (a control character or a lone surrogate is written as a `\uXXXX` escape), so a summary is at
 * most about 14.0 KB and a full page about 702 KB; a `result_page` adds to one summary at most MAX_PAGE_LIMIT
 * (100,000) units of body, about 616 KB. These tests build those worst cases through a real broker and check that the
 * answers arrive whole and under 1 MiB — no cut by bytes is needed, and none is made. On a broker over the in-memory
 * network under `patientClock` (a step carries most of a megabyte); no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { GROUPS_V1, RESULTS_V1 } from "../../src/protocol/features.ts"
import { MAX_ID_LENGTH, MAX_NAME_LENGTH } from "../../src/protocol/limits.ts"
import { MAX_LIST_LIMIT, MAX_PAGE_LIMIT, MAX_TITLE_LENGTH } from "../../src/protocol/results.ts"
import { frameBytes } from "../../src/protocol/framing.ts"
import { patientClock, withMemoryBroker } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

/** A lone high surrogate: one UTF-16 unit that JSON.stringify writes as six bytes (`\ud800`). */
const LONE = "\ud800"
/** A control character: one unit, six bytes as JSON text (`\u0001`). Allowed in a title, a run and a child. */
const CONTROL = "\u0001"

/** The worst author: id, name and group each at their limit in six-byte units. */
const worstAuthor = {
  sessionId: LONE.repeat(MAX_ID_LENGTH),
  name: LONE.repeat(MAX_NAME_LENGTH),
  frame: { features: [RESULTS_V1, GROUPS_V1], group: LONE.repeat(MAX_ID_LENGTH) }
}

/** The worst labels of a report: title, run and child at their limits in six-byte units. */
const worstLabels = { title: CONTROL.repeat(MAX_TITLE_LENGTH), run: CONTROL.repeat(MAX_ID_LENGTH), child: CONTROL.repeat(MAX_ID_LENGTH) }

/** The longest request id, six bytes a unit. */
const worstRequestId = (tag: string) => `${tag}${LONE.repeat(MAX_ID_LENGTH - tag.length)}`

/** The one `type` frame `client` got is over `least` bytes (the worst case the header computes) and within 1 MiB. */
const assertWorstFits = (client: WireClient, type: string, least: number): void => {
  const text = client.receivedTexts().find((t) => t.startsWith(`{"type":${JSON.stringify(type)}`))
  if (text === undefined) return assert.fail(`the ${type} frame's text was not kept`)
  const bytes = frameBytes(text)
  assert.isAbove(bytes, least, "precondition: the frame is the worst case the header computes")
  assert.isAtMost(bytes, MAX_FRAME_BYTES)
}

describe("result frames at their worst fit one frame", () => {
  it.effect("a listing page of 50 summaries, every field at its limit in six-byte units, is answered whole under 1 MiB", () =>
    patientClock(Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const author = yield* broker.session(worstAuthor)
      assert.include(author.registered.features ?? [], RESULTS_V1)
      for (let i = 0; i < MAX_LIST_LIMIT; i++) {
        const requestId = `store-${i}`
        yield* author.client.send({ type: "result_store", requestId, body: "x", ...worstLabels })
        const receipt = yield* author.client.next(["result_stored", "result_failed"], (frame) => frame.requestId === requestId)
        assert.strictEqual(receipt.type, "result_stored")
      }
      const requestId = worstRequestId("list-")
      yield* author.client.send({ type: "result_list", requestId, limit: MAX_LIST_LIMIT })
      const listed = yield* author.client.next(["result_listed", "result_failed"], (frame) => frame.requestId === requestId)
      if (listed.type !== "result_listed") return assert.fail(listed.reason)
      assert.strictEqual(listed.results.length, MAX_LIST_LIMIT)
      assert.strictEqual(listed.results[0]?.title, worstLabels.title)
      assertWorstFits(author.client, "result_listed", 700_000)
    })), { timeout: 60_000 })

  it.effect("a result_page of the largest window in six-byte units, with the worst summary, is answered whole under 1 MiB", () =>
    patientClock(Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const author = yield* broker.session(worstAuthor)
      const body = CONTROL.repeat(MAX_PAGE_LIMIT)
      yield* author.client.send({ type: "result_store", requestId: "store", body, ...worstLabels })
      const receipt = yield* author.client.next(["result_stored", "result_failed"], (frame) => frame.requestId === "store")
      if (receipt.type !== "result_stored") return assert.fail(receipt.reason)
      const requestId = worstRequestId("read-")
      yield* author.client.send({ type: "result_read", requestId, ref: receipt.ref, limit: MAX_PAGE_LIMIT })
      const page = yield* author.client.next(["result_page", "result_failed"], (frame) => frame.requestId === requestId)
      if (page.type !== "result_page") return assert.fail(page.reason)
      assert.strictEqual(page.text.length, MAX_PAGE_LIMIT)
      assertWorstFits(author.client, "result_page", 610_000)
    })), { timeout: 60_000 })
})
