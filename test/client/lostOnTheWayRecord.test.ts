/**
 * The client's record of sends lost on the way (Resending.ts `lostOnTheWay`): every send a connection lost
 * unanswered is recorded, abandoned or not and whether or not it is written again; it is matched by id and
 * signature, expires `REPLAY_WINDOW_MS` after the send's first write, and past `MAX_LOST_ON_THE_WAY` the one
 * recorded first is forgotten. Plain synchronous code, no connection: the side is never used.
 */
import { assert, describe, it } from "@effect/vitest"
import type { UnansweredSend } from "../../src/client/PendingSends.ts"
import { MAX_LOST_ON_THE_WAY } from "../../src/client/Resending.ts"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { unconnectedResending as resending } from "./lostOnTheWay.ts"

const lostSend = (id: string, since: number, abandoned: boolean): UnansweredSend => ({
  request: { to: "beta", message: { id, timestamp: 0, content: { text: id } } },
  frameType: "send",
  signature: `sig-${id}`,
  since,
  abandoned
})

describe("Resending.lostOnTheWay", () => {
  it("records every lost send, abandoned ones and those not written again too, by id and signature", () => {
    const resend = resending()
    resend.lost([lostSend("m1", 0, false), lostSend("m2", 0, true)], (send) => !send.abandoned)
    assert.isTrue(resend.lostOnTheWay("m1", "sig-m1", 10))
    assert.isTrue(resend.lostOnTheWay("m2", "sig-m2", 10), "an abandoned send left out of the batch not recorded")
    assert.isFalse(resend.lostOnTheWay("m1", "another signature", 10), "another send of a lost id recorded")
    assert.isFalse(resend.lostOnTheWay("m9", "sig-m9", 10), "a send never lost recorded")
  })

  it("forgets a send REPLAY_WINDOW_MS after its latest lost write", () => {
    const resend = resending()
    resend.lost([lostSend("m1", 100, false)], () => true)
    assert.isTrue(resend.lostOnTheWay("m1", "sig-m1", 100 + REPLAY_WINDOW_MS - 1))
    assert.isFalse(resend.lostOnTheWay("m1", "sig-m1", 100 + REPLAY_WINDOW_MS))
    // A fresh write of it at 1,000, lost again: its window runs from there (review revbr BR1).
    resend.lost([lostSend("m2", 100, false)], () => true)
    resend.lost([lostSend("m2", 1_000, false)], () => true)
    assert.isTrue(resend.lostOnTheWay("m2", "sig-m2", 1_000 + REPLAY_WINDOW_MS - 1))
    assert.isFalse(resend.lostOnTheWay("m2", "sig-m2", 1_000 + REPLAY_WINDOW_MS))
  })

  it(`keeps at most MAX_LOST_ON_THE_WAY sends, the one recorded first forgotten`, () => {
    const resend = resending()
    const sends = Array.from({ length: MAX_LOST_ON_THE_WAY + 1 }, (_, i) => lostSend(`m${i}`, 0, true))
    resend.lost(sends, () => false)
    assert.isFalse(resend.lostOnTheWay("m0", "sig-m0", 1), "the oldest kept past the bound")
    assert.isTrue(resend.lostOnTheWay("m1", "sig-m1", 1))
    assert.isTrue(resend.lostOnTheWay(`m${MAX_LOST_ON_THE_WAY}`, `sig-m${MAX_LOST_ON_THE_WAY}`, 1))
  })
})
