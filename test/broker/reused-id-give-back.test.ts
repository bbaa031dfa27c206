/**
 * A message given back under an id its sender reused is withdrawn only when a withdrawal names that very message
 * (DeliveryRecords.fateUnderReusedId, ReusedIdWithdrawals.ts): the chains reviews revrec (R1, R3) and revchain (D1,
 * D2) built by hand, a third send in a stamp tie after a flushed later message took the route over, and the chain
 * the model-based test (one-id-model.test.ts) shrank to — an older message under the id, never withdrawn, given back
 * after a later one to another receiver was superseded — and R1's chain start with 4,096 cancels of other ids after
 * the supersede, which push its withdrawal out of the notes' shared bound while the id's reuse mark stays (review
 * revmodel probe 1). The clock is a plain number, never moved (every stamp ties); no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { copyLeftWorld, type CopyLeftWorld, deliveredThenPushedOut, textsOf } from "../support/withdrawnCopyLeft.ts"

/** No send of d's was refused (the test would set up nothing). */
const noneRefused = (w: CopyLeftWorld): void => {
  const failed = w.framesOf(w.d).filter((f) => f.type === "error" || f.type === "delivery_failed")
  assert.deepStrictEqual(failed, [], "a send was refused: the test sets up nothing")
}

/** d's message under m0's id to `to`, its text naming its receiver ("for z"). */
const sendUnderId = (w: CopyLeftWorld, m0: Message, to: string): void => w.send(to, { ...m0, content: { text: `for ${to}` } })

/** Sends "more from" … "more to" to b: each pushes an older replay record out. */
const pushOut = (w: CopyLeftWorld, from: number, to: number): void => {
  for (let n = from; n <= to; n++) w.send("b", message(`more ${n}`))
}

/** `name`'s connection as instance `<name>-1`, with custody (`received-v1`), named its upper case. */
const withCustody = (w: CopyLeftWorld, name: string) =>
  w.reg(name, { features: custodyFeatures, instanceId: `${name}-1` }, name.toUpperCase())

/** `connection` closes without confirming what it was written; the same instance's return. */
const giveBackAndReturn = (w: CopyLeftWorld, connection: ReturnType<CopyLeftWorld["reg"]>, name: string) => {
  w.closeAbandoned(connection)
  return withCustody(w, name)
}

/**
 * Review revrec R1's chain: m0 delivered to b-1 unconfirmed, its record pushed out; a later message under its id
 * queued for away z (RECORD_LATER); m1 supersedes m0; three more sends; a third message under the id to y.
 */
const laterThenThird = () =>
  Effect.gen(function*() {
    const w = yield* copyLeftWorld({ replayRecords: 3 })
    w.closeAbandoned(w.reg("z", {}, "Z"))
    w.reg("y", {}, "Y")
    const { b1, m0 } = deliveredThenPushedOut(w, 3)
    sendUnderId(w, m0, "z")
    w.send("b", message("m1", { supersedes: m0.id }))
    pushOut(w, 1, 3)
    sendUnderId(w, m0, "y")
    noneRefused(w)
    return { w, b1, m0 }
  })

describe("a withdrawal under a reused id names its own message", () => {
  it.effect("superseded m0, given back by b-1 after a later message queued and a third send, is not given to b-1's return (revrec R1)", () =>
    Effect.gen(function*() {
      const { w, b1, m0 } = yield* laterThenThird()
      w.closeAbandoned(b1)
      const back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), [], "b-1's return was given m0, which d superseded")
    }))

  it.effect("the later message of that chain, flushed to z-1 and given back unconfirmed, is given to z's return (revrec R1)", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* laterThenThird()
      const z = withCustody(w, "z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed the later message: the test sets up nothing")
      const back = giveBackAndReturn(w, z, "z")
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["for z"], "z's return was not given the later message back")
    }))

  it.effect("superseded m0 stays withdrawn after the later message that took its route over is cancelled and a third send follows (revrec R3)", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      w.reg("y", {}, "Y")
      const { b1, m0 } = deliveredThenPushedOut(w, 3)
      sendUnderId(w, m0, "z")
      w.send("b", message("m1", { supersedes: m0.id }))
      const z = withCustody(w, "z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed the later message: the test sets up nothing")
      w.cancel(m0.id)
      assert.include(messagesAndControls(w.framesOf(z)), `cancel ${m0.id}`, "z was not sent the cancel: the test sets up nothing")
      pushOut(w, 1, 3)
      sendUnderId(w, m0, "y")
      noneRefused(w)
      w.closeAbandoned(b1)
      const back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), [], "b-1's return was given m0, which d superseded")
    }))

  it.effect("a fourth message, never withdrawn, flushed after the third's supersede and given back by q-1, is given to q's return (revchain D1)", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      w.closeAbandoned(w.reg("q", {}, "Q"))
      const y = withCustody(w, "y")
      const { m0 } = deliveredThenPushedOut(w, 3)
      sendUnderId(w, m0, "z")
      w.send("b", message("m1", { supersedes: m0.id }))
      pushOut(w, 1, 3)
      sendUnderId(w, m0, "y")
      assert.deepStrictEqual(textsOf(w.framesOf(y), m0.id), ["for y"], "y was not given the third message: the test sets up nothing")
      pushOut(w, 4, 6)
      sendUnderId(w, m0, "q")
      w.send("y", message("m2", { supersedes: m0.id }))
      noneRefused(w)
      const q = withCustody(w, "q")
      assert.deepStrictEqual(textsOf(w.framesOf(q), m0.id), ["for q"], "q's return was not flushed the fourth message: the test sets up nothing")
      const back = giveBackAndReturn(w, q, "q")
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["for q"], "q's return was not given the fourth message back")
    }))

  it.effect("m0, whose route a later message only took over, is given to b-1's return after that later one is superseded and a third send follows (revchain D2)", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      w.closeAbandoned(w.reg("q", {}, "Q"))
      const y = withCustody(w, "y")
      const { b1, m0 } = deliveredThenPushedOut(w, 3)
      sendUnderId(w, m0, "z")
      const z = withCustody(w, "z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed L1: the test sets up nothing")
      pushOut(w, 1, 3)
      sendUnderId(w, m0, "q")
      w.send("z", message("m1", { supersedes: m0.id }))
      pushOut(w, 4, 6)
      sendUnderId(w, m0, "y")
      noneRefused(w)
      assert.deepStrictEqual(textsOf(w.framesOf(y), m0.id), ["for y"], "y was not given T: the test sets up nothing")
      w.closeAbandoned(b1)
      const back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["m0"], "b-1's return was not given m0, which d never withdrew")
    }))

  it.effect("a third message, sent in a stamp tie after a flushed later message took the superseded m0's route, is given to y's return", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      const y = withCustody(w, "y")
      const { m0 } = deliveredThenPushedOut(w, 3)
      sendUnderId(w, m0, "z")
      w.send("b", message("m1", { supersedes: m0.id }))
      const z = withCustody(w, "z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed the later message: the test sets up nothing")
      pushOut(w, 1, 3)
      sendUnderId(w, m0, "y")
      noneRefused(w)
      assert.deepStrictEqual(textsOf(w.framesOf(y), m0.id), ["for y"], "y was not given the third message: the test sets up nothing")
      const back = giveBackAndReturn(w, y, "y")
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["for y"], "y's return was not given the third message back")
    }))

  it.effect("an older message, never withdrawn, given back after a later one to another receiver was superseded, is given to its return (model)", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      const y = withCustody(w, "y")
      w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      const m0: Message = { id: "m0", timestamp: 1, content: { text: "for y" } }
      w.send("y", m0)
      for (let n = 1; n <= 2; n++) w.send("b", message(`other ${n}`))
      sendUnderId(w, m0, "b")
      w.send("b", message("m1", { supersedes: m0.id }))
      noneRefused(w)
      assert.deepStrictEqual(textsOf(w.framesOf(y), m0.id), ["for y"], "y was not given m0: the test sets up nothing")
      const back = giveBackAndReturn(w, y, "y")
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["for y"], "y's return was not given m0, which d never withdrew")
    }))

  it.effect("superseded m0 is not given to b-1's return after cancels of 4,096 other ids push its supersede out of the notes (revmodel 1)", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      w.closeAbandoned(w.reg("q", {}, "Q"))
      const { b1, m0 } = deliveredThenPushedOut(w, 3)
      // A later message under the id, queued for away z: m0's id is reused.
      sendUnderId(w, m0, "z")
      w.send("b", message("m1", { supersedes: m0.id }))
      // Other messages, each queued for away q and cancelled there: each notes a withdrawal under its own id.
      for (let n = 0; n < 4096; n++) {
        w.send("q", message(`x${n}`, { id: `x${n}` }))
        w.cancel(`x${n}`)
      }
      noneRefused(w)
      w.closeAbandoned(b1)
      const back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), [], "b-1's return was given m0, which d superseded")
    }), 60_000)
})
