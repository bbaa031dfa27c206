/**
 * AnsweredAsks' index by asker session (`reply-elsewhere-v1` at a
 * registration) holds the same entries as the map: an entry the bound
 * pushes out, or the window expires, leaves the index too, and a session
 * with none left is dropped from it — so the index is bounded as the map is.
 */
import { assert, describe, it } from "@effect/vitest"
import { AnsweredAsks, MAX_ANSWERED } from "../../src/broker/AnsweredAsks.ts"
import { recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import { message } from "../support/broker.ts"

const WINDOW_MS = 1_000
const reply = (askKey: string) => OutboundRecord.of("t", "a", message("answer", { replyTo: askKey }), undefined)

describe("AnsweredAsks' index by asker session", () => {
  it("an asker whose only entry the bound pushed out leaves the index", () => {
    const answered = new AnsweredAsks(WINDOW_MS)
    const lone = recordKeyOf("lone", "q-0")
    answered.answered(lone, "lone", 10, reply(lone), 0)
    for (let i = 0; i < MAX_ANSWERED; i++) {
      const key = recordKeyOf("busy", `q-${i}`)
      answered.answered(key, "busy", 10, reply(key), 0)
    }
    assert.strictEqual(answered.size, MAX_ANSWERED)
    assert.isFalse(answered.has(lone))
    assert.strictEqual(answered.askers, 1, "the pushed-out asker is still indexed")
  })

  it("entries the window expires leave the index, and their askers with them", () => {
    const answered = new AnsweredAsks(WINDOW_MS)
    for (const asker of ["a", "b"]) {
      const key = recordKeyOf(asker, "q")
      answered.answered(key, asker, 10, reply(key), asker === "a" ? 0 : 500)
    }
    answered.prune(WINDOW_MS)
    assert.deepStrictEqual([answered.size, answered.askers], [1, 1])
    answered.prune(WINDOW_MS + 500)
    assert.deepStrictEqual([answered.size, answered.askers], [0, 0])
  })
})

describe("AnsweredAsks.forget (a lost reply answered nothing)", () => {
  it("the entry leaves the map and the index, and its asker's other entries stay", () => {
    const answered = new AnsweredAsks(WINDOW_MS)
    const lost = recordKeyOf("a", "q-lost")
    const kept = recordKeyOf("a", "q-kept")
    answered.answered(lost, "a", 10, reply(lost), 0)
    answered.answered(kept, "a", 10, reply(kept), 0)
    answered.forget(lost)
    assert.deepStrictEqual([answered.has(lost), answered.has(kept), answered.askers], [false, true, 1])
    answered.forget(kept)
    assert.deepStrictEqual([answered.size, answered.askers], [0, 0])
  })
})
