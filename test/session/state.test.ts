/**
 * The synchronous state machines: input validation (C-TOOL-5/6), inbound
 * de-duplication (C-DLV-11), the reply tracker (C-RPL) and the reply-waiter
 * slot (C-ASK-1…4), including model-based properties.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Option } from "effect"
import * as fc from "fast-check"
import { AskNoLongerOpen, InvalidInput, NoReplyContext, ReplyPeerDisconnected, SessionEnded, TargetUnresolved } from "../../src/session/errors.ts"
import { makeInboundAdmission } from "../../src/session/InboundAdmission.ts"
import { type InboundContext, makeReplyTracker } from "../../src/session/ReplyTracker.ts"
import { makeReplyWaiterSlot } from "../../src/session/ReplyWaiter.ts"
import { checkLabel, checkText, validateAttachments } from "../../src/session/validation.ts"
import { inboundMessage, info } from "./support.ts"

describe("C-TOOL-5 attachments", () => {
  it("accepts file/snippet/context with string fields and drops extra keys", () => {
    assert.deepStrictEqual(
      validateAttachments([{ type: "file", name: "a.ts", content: "x\ty\r\n", language: "ts", extra: 1 }]),
      [{ type: "file", name: "a.ts", content: "x\ty\r\n", language: "ts" }]
    )
    assert.strictEqual(validateAttachments(undefined), undefined)
  })

  it("rejects any other type and non-string fields", () => {
    for (
      const bad of [
        [{ type: "image", name: "a", content: "x" }],
        [{ type: "file", name: 1, content: "x" }],
        [{ type: "file", name: "a", content: null }],
        [{ type: "file", name: "a", content: "x", language: 3 }],
        "not an array",
        [null]
      ]
    ) {
      const result = validateAttachments(bad)
      assert.isTrue(result instanceof InvalidInput, JSON.stringify(bad))
      if (result instanceof InvalidInput) assert.match(result.message, /^Invalid message: attachments must be an array of/)
    }
  })
})

describe("C-TOOL-6 control characters", () => {
  it("bodies may hold TAB, LF and CR only; labels none", () => {
    assert.isUndefined(checkText("message", "a\tb\nc\r\n"))
    assert.strictEqual(
      checkText("message", "bell\u0007")?.message,
      "Invalid message: message contains a control character (only TAB, LF and CR are allowed)"
    )
    assert.isDefined(checkText("message", "c1\u0085"))
    assert.isDefined(checkText("message", "del\u007f"))
    assert.strictEqual(checkLabel("to", "plan\tner")?.message, "Invalid message: to contains a control character")
    assert.isUndefined(checkLabel("to", "planner"))
    const attachment = validateAttachments([{ type: "snippet", name: "a\nb", content: "x" }])
    assert.isTrue(attachment instanceof InvalidInput && attachment.message.includes("attachments[0].name"))
    const content = validateAttachments([{ type: "snippet", name: "a", content: "x\u0000" }])
    assert.isTrue(content instanceof InvalidInput && content.message.includes("attachments[0].content"))
  })
})

describe("C-DLV-11 inbound admission", () => {
  it("remembers (sender, message id) pairs for the window, then forgets", () => {
    const admission = makeInboundAdmission({ windowMs: 1_000, capacity: 10 })
    assert.isFalse(admission.seen("a", "m1", 0))
    admission.commit("a", "m1", 0)
    assert.isTrue(admission.seen("a", "m1", 500))
    assert.isFalse(admission.seen("b", "m1", 500), "another sender's m1 is another message")
    assert.isFalse(admission.seen("a", "m1", 1_001))
  })

  it("keeps at most `capacity`, forgetting the oldest", () => {
    const admission = makeInboundAdmission({ capacity: 3 })
    for (let i = 0; i < 5; i++) admission.commit("a", `m${i}`, i)
    assert.strictEqual(admission.size(), 3)
    assert.isFalse(admission.seen("a", "m1", 5))
    assert.isTrue(admission.seen("a", "m4", 5))
  })

  it("copies of a held message join it, whatever the window; commit says how many joined", () => {
    const admission = makeInboundAdmission({ windowMs: 1_000, capacity: 1 })
    assert.isFalse(admission.join("a", "m1"), "nothing held yet")
    admission.hold("a", "m1")
    assert.isFalse(admission.seen("a", "m1", 0), "held is not handled")
    assert.isTrue(admission.join("a", "m1"))
    assert.isTrue(admission.join("a", "m1"))
    assert.isFalse(admission.join("b", "m1"), "another sender's m1 is another message")
    assert.strictEqual(admission.commit("a", "m1", 5_000), 2)
    assert.isFalse(admission.join("a", "m1"), "committed: no longer held")
    assert.isTrue(admission.seen("a", "m1", 5_500))
    assert.isFalse(admission.seen("a", "m1", 6_001), "forgotten after the window like any handled message")
  })
})

const ask = (fromId: string, name: string | undefined, id: string, receivedAt: number, expectsReply = true): InboundContext => {
  const { from, message } = inboundMessage(info(fromId, name === undefined ? {} : { name }), id, `question ${id}`, {
    expectsReply
  })
  return { from, message, receivedAt }
}

const errorText = (result: InboundContext | NoReplyContext | TargetUnresolved | AskNoLongerOpen): string =>
  result instanceof NoReplyContext || result instanceof TargetUnresolved || result instanceof AskNoLongerOpen
    ? result.message
    : `ok:${result.message.id}`

describe("C-RPL reply tracker", () => {
  it("C-RPL-1: only expectsReply === true is a pending ask", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask("p-1", "planner", "plain", 0, false))
    tracker.record(ask("p-1", "planner", "q", 1))
    assert.deepStrictEqual(tracker.pending(2).map((context) => context.message.id), ["q"])
  })

  it("C-RPL-2: in a triggered turn, reply targets that message, even a plain send", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask("p-1", "planner", "q1", 0))
    tracker.record(ask("p-1", "planner", "q2", 0))
    const plain = ask("w-1", "worker", "fyi", 1, false)
    tracker.record(plain)
    tracker.queueTurn(plain)
    assert.strictEqual(tracker.beginTurn(undefined, 2)?.message.id, "fyi")
    assert.strictEqual(errorText(tracker.resolve({}, 3)), "ok:fyi")
    tracker.endTurn()
    assert.strictEqual(errorText(tracker.resolve({}, 3)), "Multiple pending asks — specify `to`")
    // The host may also name the triggering message itself.
    tracker.beginTurn({ from: "p-1", messageId: "q2" }, 4)
    assert.strictEqual(errorText(tracker.resolve({}, 4)), "ok:q2")
  })

  it("the queue of turns to come is bounded for a host that never begins turns: the newest are kept", () => {
    const tracker = makeReplyTracker(600_000)
    for (let i = 0; i < 3_000; i++) {
      const context = ask("w-1", "worker", `m-${i}`, i, false)
      tracker.record(context)
      tracker.queueTurn(context)
    }
    const held: Array<string> = []
    for (let context = tracker.beginTurn(undefined, 3_000); context !== undefined; context = tracker.beginTurn(undefined, 3_000)) {
      held.push(context.message.id)
    }
    assert.isAtMost(held.length, 1_249)
    assert.isAtLeast(held.length, 1_000)
    assert.strictEqual(held.at(-1), "m-2999", "the newest are kept, oldest first")
    assert.strictEqual(held[0], `m-${3_000 - held.length}`)
  })

  it("C-RPL-3: outside a turn, the single pending ask; none or several are errors", () => {
    const tracker = makeReplyTracker(600_000)
    assert.strictEqual(errorText(tracker.resolve({}, 0)), "No active intercom context to reply to")
    tracker.record(ask("p-1", "planner", "q1", 0))
    assert.strictEqual(errorText(tracker.resolve({}, 0)), "ok:q1")
    tracker.record(ask("w-1", "worker", "q2", 1))
    assert.strictEqual(errorText(tracker.resolve({}, 2)), "Multiple pending asks — specify `to`")
  })

  it("C-RPL-4: `to` resolves among pending askers", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask("planner-id-0001", "planner", "q1", 0))
    tracker.record(ask("worker-id-00002", "worker", "q2", 1))
    tracker.record(ask("worker-id-00002", "worker", "q3", 2))
    assert.strictEqual(errorText(tracker.resolve({ to: "PLANNER" }, 3)), "ok:q1")
    assert.strictEqual(errorText(tracker.resolve({ to: "planner-id-0001" }, 3)), "ok:q1")
    assert.strictEqual(errorText(tracker.resolve({ to: "worker" }, 3)), `Multiple pending asks from "worker"`)
    assert.strictEqual(errorText(tracker.resolve({ to: "nobody" }, 3)), `No pending ask from "nobody"`)
    assert.match(errorText(tracker.resolve({ to: "plan" }, 3)), /^Target "plan" is too short/)
    // An exact replyTo disambiguates, and `to` must then match its sender.
    assert.strictEqual(errorText(tracker.resolve({ replyTo: "q3" }, 3)), "ok:q3")
    assert.strictEqual(errorText(tracker.resolve({ replyTo: "q3", to: "worker" }, 3)), "ok:q3")
    assert.strictEqual(
      errorText(tracker.resolve({ replyTo: "q3", to: "planner" }, 3)),
      `Reply context "q3" is not from "planner"`
    )
    assert.strictEqual(errorText(tracker.resolve({ replyTo: "zz" }, 3)), `No reply context for "zz"`)
  })

  it("C-RPL-5: a reply marks the ask replied and clears the turn context", () => {
    const tracker = makeReplyTracker(600_000)
    const q = ask("p-1", "planner", "q1", 0)
    tracker.record(q)
    tracker.queueTurn(q)
    tracker.beginTurn(undefined, 0)
    tracker.markReplied("p-1", "q1")
    assert.isUndefined(tracker.currentTurn())
    assert.deepStrictEqual(tracker.pending(1), [])
  })

  it("C-RPL-6: asks expire after the ask timeout; C-RPL-10: a departed sender's asks retire", () => {
    const tracker = makeReplyTracker(1_000)
    tracker.record(ask("p-1", "planner", "q1", 0))
    tracker.record(ask("w-1", "worker", "q2", 500))
    assert.deepStrictEqual(tracker.pending(1_000).map((context) => context.message.id), ["q1", "q2"])
    assert.deepStrictEqual(tracker.pending(1_001).map((context) => context.message.id), ["q2"])
    tracker.forgetSender("w-1")
    assert.deepStrictEqual(tracker.pending(1_001), [])
  })

  it("property: pending is the unreplied, unexpired asks, oldest first", () => {
    const command = fc.oneof(
      fc.record({ kind: fc.constant("ask" as const), sender: fc.integer({ min: 0, max: 3 }), expects: fc.boolean() }),
      fc.record({ kind: fc.constant("reply" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 400 }) }),
      fc.record({ kind: fc.constant("leave" as const), sender: fc.integer({ min: 0, max: 3 }) })
    )
    fc.assert(
      fc.property(fc.array(command, { maxLength: 60 }), (commands) => {
        const timeout = 1_000
        const tracker = makeReplyTracker(timeout)
        const model = new Map<string, { readonly sender: string; readonly at: number }>()
        let now = 0
        let next = 0
        for (const c of commands) {
          switch (c.kind) {
            case "ask": {
              const id = `m${next++}`
              tracker.record(ask(`s${c.sender}`, undefined, id, now, c.expects))
              if (c.expects) model.set(id, { sender: `s${c.sender}`, at: now })
              break
            }
            case "reply": {
              const ids = [...model.keys()]
              const id = ids.length === 0 ? "none" : ids[c.pick % ids.length] ?? "none"
              tracker.markReplied(model.get(id)?.sender ?? "nobody", id)
              model.delete(id)
              break
            }
            case "tick":
              now += c.ms
              break
            case "leave":
              tracker.forgetSender(`s${c.sender}`)
              for (const [id, entry] of model) if (entry.sender === `s${c.sender}`) model.delete(id)
              break
          }
          const expected = [...model.entries()]
            .filter(([, entry]) => now - entry.at <= timeout)
            .sort((a, b) => a[1].at - b[1].at)
            .map(([id]) => id)
          const actual = tracker.pending(now).map((context) => context.message.id)
          if (JSON.stringify(expected) !== JSON.stringify(actual)) return false
          for (const [id, entry] of [...model]) if (now - entry.at > timeout) model.delete(id)
        }
        return true
      })
    )
  })
})

describe("C-ASK-1…4 reply-waiter slot", () => {
  const target = info("target-id-1", { name: "Target" })

  it.effect("one reservation at a time; an earlier holder's late release does not free the next winner's slot", () =>
    Effect.gen(function*() {
      const slot = makeReplyWaiterSlot()
      const first = slot.reserve()
      if (first === undefined) return assert.fail("no reservation")
      assert.isUndefined(slot.reserve(), "a second caller got the slot while it was held")
      slot.release(first)
      // The slot is free: the next caller wins it.
      const winner = slot.reserve()
      if (winner === undefined) return assert.fail("the slot was not freed by its holder's release")
      // The first holder's call ends late and releases (and binds) again: the winner keeps the slot.
      slot.release(first)
      slot.bind(first, { questionId: "q-stale", targetId: "target-id-1", targetName: undefined })
      assert.strictEqual(slot.current()?.outcome, winner.outcome)
      assert.isUndefined(slot.current()?.questionId, "the stale bind changed the winner")
      assert.isUndefined(slot.reserve(), "a third caller got the slot: the stale release freed it")
      // A handle from another slot (an earlier generation's) cannot release it either.
      const foreign = makeReplyWaiterSlot().reserve()
      if (foreign !== undefined) slot.release(foreign)
      assert.strictEqual(slot.current()?.outcome, winner.outcome)
      slot.release(winner)
      assert.isUndefined(slot.current())
    }))

  it.effect("only the exact replyTo from the target (by id, or name ignoring case) resolves the waiter", () =>
    Effect.gen(function*() {
      const slot = makeReplyWaiterSlot()
      const reserved = slot.reserve()
      if (reserved === undefined) return assert.fail("no reservation")
      assert.isFalse(slot.route(inboundMessage(target, "r0", "early", { replyTo: "q1" })), "not bound yet")
      const waiter = slot.bind(reserved, { questionId: "q1", targetId: target.id, targetName: "Target" })
      assert.isFalse(slot.route(inboundMessage(target, "r1", "wrong thread", { replyTo: "q0" })))
      assert.isFalse(slot.route(inboundMessage(info("intruder"), "r2", "not the target", { replyTo: "q1" })))
      assert.isFalse(slot.route(inboundMessage(target, "r3", "no thread")))
      assert.isTrue(slot.route(inboundMessage(info("new-endpoint", { name: "target" }), "r4", "yes", { replyTo: "q1" })))
      const reply = yield* Deferred.await(waiter.outcome)
      assert.strictEqual(reply.message.id, "r4")
      assert.isFalse(slot.route(inboundMessage(target, "r5", "again", { replyTo: "q1" })), "settled once")
    }))

  it.effect("a departed peer ends only the wait it names, if it still holds the slot; teardown ends whatever is current", () =>
    Effect.gen(function*() {
      const slot = makeReplyWaiterSlot()
      const earlier = slot.reserve()
      if (earlier === undefined) return assert.fail("no reservation")
      slot.release(earlier)
      const reserved = slot.reserve()
      if (reserved === undefined) return assert.fail("no reservation")
      const waiter = slot.bind(reserved, { questionId: "q1", targetId: target.id, targetName: undefined })
      slot.peerLeft(earlier, new ReplyPeerDisconnected({ peerId: target.id }))
      assert.isTrue(Option.isNone(yield* Deferred.poll(waiter.outcome)), "a released waiter's departure ends nothing")
      slot.peerLeft(reserved, new ReplyPeerDisconnected({ peerId: target.id }))
      const exit = yield* Effect.exit(Deferred.await(waiter.outcome))
      assert.deepStrictEqual(exit, Exit.fail(new ReplyPeerDisconnected({ peerId: target.id })))

      const slot2 = makeReplyWaiterSlot()
      const second = slot2.reserve()
      if (second === undefined) return assert.fail("no reservation")
      slot2.teardown(new SessionEnded())
      assert.deepStrictEqual(yield* Effect.exit(Deferred.await(second.outcome)), Exit.fail(new SessionEnded()))
    }))

  it.effect("a reply for a wait that ended but still holds the slot is refused, and nothing owed to a taken reply is done for it", () =>
    Effect.gen(function*() {
      // Without the check, `taking` would commit the reply's admission and queue its receipts for a wait that never
      // gets it, and the refused reply would reach the message fiber as a duplicate: neither the wait's nor the
      // host's (review revbv bv1).
      const slot = makeReplyWaiterSlot()
      const reserved = slot.reserve()
      if (reserved === undefined) return assert.fail("no reservation")
      const waiter = slot.bind(reserved, { questionId: "q1", targetId: target.id, targetName: "Target" })
      // The wait ends (its target left) and its release has not run yet: the slot still holds it.
      slot.peerLeft(waiter, new SessionEnded())
      assert.isTrue(yield* Deferred.isDone(waiter.outcome))
      assert.strictEqual(slot.current()?.outcome, waiter.outcome)
      let took = 0
      const routed = slot.route(inboundMessage(target, "r1", "answer", { replyTo: "q1" }), () => {
        took++
      })
      assert.isFalse(routed, "the ended wait took the reply")
      assert.strictEqual(took, 0, "what is owed to a taken reply was done for one the wait never gets")
    }))
})
