/**
 * `PendingSends` (one connection's sends waiting for their answer) over
 * random begins, answers and withdrawals, against a list kept in order:
 * when the connection closes, every send still waiting fails with
 * `ConnectionLost` and all of them (a child's `supervisor_send` in its
 * place) are `unanswered` in the order they were begun; `addressedTo`
 * addresses a lost `supervisor_send` to the next connection's supervisor; `retake` takes such a list into a new table in that
 * order, leaves an id already waiting there alone, and skips a send whose
 * frame cannot be built. A retaken send's answer that comes before any
 * caller joined it is kept for one `collect` by the same send, until
 * `release` or the close; a send written once more after that is still
 * marked `afterLoss`, until the close. A send every caller left (`leave`) is abandoned,
 * not forgotten: it stays, its answer is a late one (`settle` false), the
 * close keeps it among the unanswered, marked, and a retake of it keeps no
 * answer; callers are counted, so one leaving abandons nothing another still
 * waits on; at most `MAX_ABANDONED` are kept (review revas AS1, AS3).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit } from "effect"
import fc from "fast-check"
import { deliveryError } from "../../src/client/errors.ts"
import { addressedTo, MAX_ABANDONED, PendingSends, type SendAnswer, type UnansweredSend } from "../../src/client/PendingSends.ts"
import { type SendFrameType, type SendRequest, signatureOf } from "../../src/client/requests.ts"

const request = (id: string): SendRequest => ({ to: "beta", message: { id, timestamp: 0, content: { text: id } } })

const op = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("begin" as const),
      frameType: fc.constantFrom<SendFrameType>("send", "send", "supervisor_send")
    })
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("answer" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("forget" as const), pick: fc.nat() }) }
)

describe("PendingSends", () => {
  it("keeps every send still waiting at the close, a supervisor_send in its place, in the order they were begun", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const sends = new PendingSends()
        const model: Array<{ readonly id: string; readonly frameType: SendFrameType }> = []
        const begun = []
        let n = 0
        for (const step of ops) {
          if (step.op === "begin") {
            const id = `m${n++}`
            begun.push(sends.begin(request(id), step.frameType, id, n))
            model.push({ id, frameType: step.frameType })
          } else if (model.length > 0) {
            const id = model.splice(step.pick % model.length, 1)[0]?.id ?? ""
            if (step.op === "answer") {
              assert.strictEqual(sends.take(id)?.request.message.id, id)
            } else {
              const pending = sends.get(id)
              assert.isDefined(pending)
              sends.forget(pending!)
            }
            assert.isUndefined(sends.get(id))
          }
        }
        assert.deepStrictEqual(sends.unanswered(), [], "nothing is unanswered while the connection is open")
        sends.failAll()
        assert.deepStrictEqual(
          sends.unanswered().map((lost) => [lost.request.message.id, lost.frameType]),
          model.map((send) => [send.id, send.frameType])
        )
        const waiting = new Set(model.map((send) => send.id))
        for (const pending of begun) {
          const done = Deferred.isDoneUnsafe(pending.answer)
          assert.strictEqual(done, waiting.has(pending.request.message.id), "every send still waiting failed")
        }
      })
    )
  })

  it("addressedTo gives a lost supervisor_send this connection's supervisor and the matching signature, and leaves plain sends alone", () => {
    const lost = (id: string, frameType: SendFrameType, to: string): UnansweredSend => {
      const sent = { to, message: { id, timestamp: 0, content: { text: id } } }
      return { request: sent, frameType, signature: signatureOf(sent, frameType), since: 0, abandoned: false }
    }
    const sends = [lost("m1", "supervisor_send", "sup-old"), lost("m2", "send", "beta"), lost("m3", "supervisor_send", "sup-new")]
    const addressed = addressedTo(sends, "sup-new")
    assert.deepStrictEqual(addressed.map((send) => send.request.to), ["sup-new", "beta", "sup-new"])
    const retry = { ...lost("m1", "supervisor_send", "sup-new").request }
    assert.strictEqual(addressed[0]?.signature, signatureOf(retry, "supervisor_send"), "the retry would not join it")
    assert.strictEqual(addressed[1], sends[1])
    const unchanged = sends.slice(1)
    assert.strictEqual(addressedTo(unchanged, "sup-new"), unchanged, "a new array when nothing changed")
    assert.strictEqual(addressedTo(sends, undefined), sends, "readdressed with no supervisor to address")
  })

  it.effect("a send still waiting fails with ConnectionLost naming its message", () =>
    Effect.gen(function*() {
      const sends = new PendingSends()
      const pending = sends.begin(request("m1"), "send", "m1", 0)
      sends.failAll()
      const error = yield* Effect.flip(Deferred.await(pending.answer))
      assert.deepInclude(error, { _tag: "ConnectionLost", operation: "send", messageId: "m1" })
    }))

  it("retake takes the lost sends in their order, leaves an id already waiting alone, and skips a frame it cannot build", () => {
    const lost: ReadonlyArray<UnansweredSend> = ["m1", "m2", "m3", "m4"].map((id, since) => ({
      request: request(id),
      frameType: "send",
      signature: id,
      since,
      abandoned: false
    }))
    const sends = new PendingSends()
    const already = sends.begin(request("m2"), "send", "m2", 9)
    const { messageIds, texts } = sends.retake(lost, (send) =>
      send.request.message.id === "m3"
        ? deliveryError({ messageId: "m3", code: "E_TEST", reason: "cannot build", retryable: false })
        : `frame ${send.request.message.id}`, 0)
    assert.deepStrictEqual(texts, ["frame m1", "frame m4"])
    assert.deepStrictEqual(messageIds, ["m1", "m4"])
    assert.strictEqual(sends.get("m2"), already)
    assert.isUndefined(sends.get("m3"))
    // A batch cut short by this connection's close is kept for the next one, in the table's order.
    sends.failAll()
    assert.deepStrictEqual(sends.unanswered().map((send) => [send.request.message.id, send.since]), [
      ["m2", 9],
      ["m1", 0],
      ["m4", 3]
    ])
  })

  describe("answers to retaken sends", () => {
    const lostSend = (id: string): UnansweredSend => ({ request: request(id), frameType: "send", signature: id, since: 0, abandoned: false })
    const delivered = (id: string): SendAnswer => Exit.succeed({ messageId: id, delivery: "socket_delivered" })
    /** A table that retook m1 and m2 and got both answered. */
    const answered = () => {
      const sends = new PendingSends()
      sends.retake([lostSend("m1"), lostSend("m2")], (send) => send.request.message.id, 0)
      for (const id of ["m1", "m2"]) sends.settle(sends.take(id)!, delivered(id))
      return sends
    }

    it("one that came before its caller is collected once, by the same send only", () => {
      const sends = answered()
      assert.isUndefined(sends.collect("m1", "another signature"), "a different send took it")
      assert.deepStrictEqual(sends.collect("m1", "m1"), delivered("m1"))
      assert.isUndefined(sends.collect("m1", "m1"), "collected twice")
    })

    it("one whose caller had joined it is not kept: the caller got it", () => {
      const sends = new PendingSends()
      sends.retake([lostSend("m1")], (send) => send.request.message.id, 0)
      const answer = sends.join(sends.get("m1")!)
      sends.settle(sends.take("m1")!, delivered("m1"))
      assert.isTrue(Deferred.isDoneUnsafe(answer))
      assert.isUndefined(sends.collect("m1", "m1"))
    })

    it("one from a plain begin is not kept: its caller waits on it", () => {
      const sends = new PendingSends()
      sends.begin(request("m1"), "send", "m1", 0)
      sends.settle(sends.take("m1")!, delivered("m1"))
      assert.isUndefined(sends.collect("m1", "m1"))
    })

    it("release drops those not collected, and one answered after it is not kept", () => {
      const sends = answered()
      sends.retake([lostSend("m3")], (send) => send.request.message.id, 0)
      sends.release(["m1", "m3"])
      sends.settle(sends.take("m3")!, delivered("m3"))
      assert.isUndefined(sends.collect("m1", "m1"))
      assert.isUndefined(sends.collect("m3", "m3"))
      assert.deepStrictEqual(sends.collect("m2", "m2"), delivered("m2"), "release dropped another batch's answer")
    })

    it("a send written once more after release is marked afterLoss, as its re-send was; one of its id with another signature, or one never lost, is not", () => {
      const sends = answered()
      sends.release(["m1", "m2"])
      assert.isUndefined(sends.collect("m1", "m1"), "setup: release kept the answer")
      assert.isTrue(sends.begin(request("m1"), "send", "m1", 5).afterLoss, "the retry after release read as a first write")
      assert.isTrue(sends.writtenAfterLoss("m1", "m1"))
      assert.isFalse(sends.begin(request("m2"), "send", "another signature", 5).afterLoss, "a different send marked")
      assert.isFalse(sends.begin(request("m9"), "send", "m9", 5).afterLoss, "a send never lost marked")
    })

    it("a first write here of a send an earlier connection lost (the client's record) is marked afterLoss; others are not", () => {
      const sends = new PendingSends((id, signature, now) => id === "m1" && signature === "m1" && now === 5)
      assert.isTrue(sends.begin(request("m1"), "send", "m1", 5).afterLoss, "a send lost before read as a first write")
      assert.isFalse(sends.begin(request("m2"), "send", "m2", 5).afterLoss, "a send never lost marked")
    })

    it("the close forgets which sends were written again after a loss", () => {
      const sends = answered()
      sends.failAll()
      assert.isFalse(sends.writtenAfterLoss("m1", "m1"))
      assert.isFalse(sends.begin(request("m1"), "send", "m1", 5).afterLoss)
    })

    it("the close drops every kept answer", () => {
      const sends = answered()
      sends.failAll()
      assert.isUndefined(sends.collect("m1", "m1"))
      assert.isUndefined(sends.collect("m2", "m2"))
    })
  })
  describe("abandoned sends (every caller left)", () => {
    const delivered = (id: string): SendAnswer => Exit.succeed({ messageId: id, delivery: "socket_delivered" })

    it("one caller leaving abandons nothing another still waits on; the last leaving does, and its answer is late", () => {
      const sends = new PendingSends()
      const first = sends.begin(request("m1"), "send", "m1", 0)
      sends.join(first)
      sends.leave(first)
      assert.isTrue(sends.settle(sends.take("m1")!, delivered("m1")), "the answer of a send a caller still waits on went late")
      const second = sends.begin(request("m2"), "send", "m2", 0)
      sends.join(second)
      sends.leave(second)
      sends.leave(second)
      assert.strictEqual(sends.get("m2"), second, "an abandoned send was forgotten")
      assert.isFalse(sends.settle(sends.take("m2")!, delivered("m2")), "an abandoned send's answer was not late")
    })

    it("the close keeps an abandoned send, marked, in its place; retaken, its answer is late and not kept", () => {
      const sends = new PendingSends()
      sends.begin(request("m1"), "send", "m1", 0)
      sends.leave(sends.begin(request("m2"), "send", "m2", 1))
      sends.begin(request("m3"), "send", "m3", 2)
      sends.failAll()
      assert.deepStrictEqual(sends.unanswered().map((send) => [send.request.message.id, send.abandoned]), [
        ["m1", false],
        ["m2", true],
        ["m3", false]
      ])
      const next = new PendingSends()
      next.retake(sends.unanswered(), (send) => send.request.message.id, 0)
      assert.isTrue(next.settle(next.take("m1")!, delivered("m1")), "a retaken send's answer was not kept")
      assert.isFalse(next.settle(next.take("m2")!, delivered("m2")), "a retaken abandoned send's answer was not late")
      assert.isUndefined(next.collect("m2", "m2"), "an abandoned send's answer was kept for a retry")
      // Its retry joins it like any other: the answer is then the caller's.
      next.retake(sends.unanswered(), (send) => send.request.message.id, 0)
      next.join(next.get("m2")!)
      assert.isTrue(next.settle(next.take("m2")!, delivered("m2")))
    })

    it("a write withdrawn before its frame left is forgotten, not abandoned", () => {
      const sends = new PendingSends()
      sends.forget(sends.begin(request("m1"), "send", "m1", 0))
      assert.isUndefined(sends.get("m1"))
      sends.failAll()
      assert.deepStrictEqual(sends.unanswered(), [])
    })

    it(`keeps at most ${MAX_ABANDONED}: past it the oldest abandoned is forgotten, never one still waited on`, () => {
      const sends = new PendingSends()
      sends.begin(request("waiting"), "send", "waiting", 0)
      for (let i = 0; i <= MAX_ABANDONED; i++) sends.leave(sends.begin(request(`a${i}`), "send", `a${i}`, i))
      assert.isUndefined(sends.get("a0"), "the oldest abandoned send was kept past the bound")
      assert.isDefined(sends.get("a1"))
      assert.isDefined(sends.get(`a${MAX_ABANDONED}`))
      assert.isDefined(sends.get("waiting"), "a send still waited on was forgotten for the bound")
      // Answered ones make room: the next abandoned send pushes nothing out.
      sends.take("a1")
      sends.leave(sends.begin(request("b"), "send", "b", 0))
      assert.isDefined(sends.get("a2"))
    })
  })
})
