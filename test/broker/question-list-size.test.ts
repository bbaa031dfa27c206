/**
 * C-BRK-3 for `question_list` (helper qsize): a page is cut by bytes as well as by count. A summary carries previews
 * of up to 2,048 characters (C-DQ-14), each up to six bytes as JSON text, so 100 summaries of questions written in
 * control characters make a frame of about 1.25 MB; before, that frame was dropped by the writer's guard and the
 * listing never answered. Now the page closes before the summary that would pass 1 MiB, `nextOffset` names it, and
 * following `nextOffset` reaches every question once, in order. The question fiber's work is awaited with a
 * `question_get` sent after the listing (it takes its items in order), so a listing never written fails at once. On
 * a broker over the in-memory network with a memory question store, under `patientClock` (a step carries megabytes:
 * on a loaded machine it can take longer than the TestClock's default second); no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { patientClock } from "../support/memory.ts"
import { questionAsk, questionWorld } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

/** How many questions the child asks: a full page of the largest size a listing allows. */
const COUNT = 100

/** A question's text: twice a preview, each character a six-byte JSON escape. */
const TEXT = "\u0001".repeat(4096)

const idOf = (i: number) => `q-${String(i).padStart(3, "0")}`

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

interface Page {
  readonly questions: ReadonlyArray<{ readonly id: string; readonly messageTruncated: boolean }>
  readonly total: number
  readonly offset: number
  readonly limit: number
  readonly nextOffset?: number
}

/** The page the supervisor is written for a listing from `offset`, with the frame's size; awaited by a `question_get` after it. */
const listed = (supervisor: WireClient, offset: number): Effect.Effect<{ readonly page: Page; readonly bytes: number }, unknown> =>
  Effect.gen(function*() {
    const n = supervisor.count("question_result") + supervisor.count("question_failed")
    const requestId = `list-${n}`
    yield* supervisor.send({ type: "question_list", requestId, offset, limit: COUNT })
    yield* supervisor.send({ type: "question_get", requestId: `after-${n}`, questionId: idOf(0) })
    yield* answerTo(supervisor, `after-${n}`)
    const texts = supervisor.receivedTexts().filter((text) => text.includes(`"requestId":"${requestId}"`))
    assert.strictEqual(texts.length, 1, `the listing from ${offset}: written ${texts.length} times`)
    const frame: { readonly type: string; readonly page: Page } = JSON.parse(texts[0]!)
    assert.strictEqual(frame.type, "question_result")
    return { page: frame.page, bytes: Buffer.byteLength(texts[0]!) }
  })

describe("a question_list page is cut by bytes as well as by count", () => {
  it.effect("100 summaries of escaped previews: each page fits 1 MiB and closes before the next summary would pass it, and nextOffset reaches every question once, in order", () =>
    patientClock(Effect.gen(function*() {
      const { child, supervisor } = yield* questionWorld
      for (let i = 0; i < COUNT; i++) {
        const requestId = `r-${i}`
        yield* child.send({ ...questionAsk, requestId, questionId: idOf(i), text: TEXT })
        assert.strictEqual((yield* answerTo(child, requestId)).type, "question_result", `precondition: ${idOf(i)} saved`)
      }
      const seen: Array<string> = []
      const pages: Array<Page> = []
      let offset: number | undefined = 0
      while (offset !== undefined) {
        const written: { readonly page: Page; readonly bytes: number } = yield* listed(supervisor, offset)
        const { bytes, page } = written
        assert.isAtMost(bytes, MAX_FRAME_BYTES)
        assert.strictEqual(page.total, COUNT)
        assert.strictEqual(page.offset, offset)
        assert.strictEqual(page.limit, COUNT)
        assert.isAbove(page.questions.length, 0, "an empty page")
        for (const question of page.questions) {
          seen.push(question.id)
          assert.isTrue(question.messageTruncated, "precondition: the preview is cut at 2,048 characters")
        }
        const next: number | undefined = page.nextOffset
        if (next !== undefined) {
          assert.strictEqual(next, offset + page.questions.length)
          // Closed no earlier than it had to: the next summary, with its comma, would take the frame past 1 MiB.
          const following = (yield* listed(supervisor, next)).page.questions[0]
          assert.isAbove(bytes + 1 + Buffer.byteLength(JSON.stringify(following)), MAX_FRAME_BYTES)
        }
        pages.push(page)
        offset = next
      }
      assert.isAbove(pages.length, 1, "precondition: the questions do not fit one frame")
      assert.deepStrictEqual(seen, Array.from({ length: COUNT }, (_, i) => idOf(i)))
    })))
})
