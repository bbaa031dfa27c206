/**
 * The idle queue's synchronous state machine (C-DLV-10, C-ORD-27, C-ORD-29):
 * random programs of enqueue / remove / claim / rollback / drop, run against
 * the store and against a model (a list sorted by arrival number).
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import type { Claim } from "../../src/workflow/IdleQueueStore.ts"
import { IdleQueueStore } from "../../src/workflow/IdleQueueStore.ts"
import type { InboundEntry } from "../../src/workflow/InboundEntry.ts"
import { entry, ids } from "./orderingSupport.ts"

type Op =
  | { readonly op: "enqueue"; readonly sender: number; readonly message: number; readonly progress: boolean }
  | { readonly op: "remove"; readonly sender: number; readonly message: number }
  | { readonly op: "claim"; readonly senders: ReadonlyArray<number> }
  | { readonly op: "rollback"; readonly claim: number; readonly from: number }
  | { readonly op: "drop"; readonly sender: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("enqueue" as const), sender: fc.nat(3), message: fc.nat(30), progress: fc.boolean() }),
  fc.record({ op: fc.constant("remove" as const), sender: fc.nat(3), message: fc.nat(30) }),
  fc.record({ op: fc.constant("claim" as const), senders: fc.uniqueArray(fc.nat(3), { maxLength: 3 }) }),
  fc.record({ op: fc.constant("rollback" as const), claim: fc.nat(10), from: fc.nat(6) }),
  fc.record({ op: fc.constant("drop" as const), sender: fc.nat(3) })
)

interface ModelSlot {
  readonly seq: number
  readonly entry: InboundEntry<string>
}

describe("IdleQueueStore", () => {
  it("matches a model of arrival-ordered slots under random claims and rollbacks (C-DLV-10, C-ORD-27, C-ORD-29)", () => {
    fc.assert(fc.property(fc.array(opArb, { maxLength: 60 }), (program) => {
      const store = new IdleQueueStore<string>()
      let model: Array<ModelSlot> = []
      let seq = 0
      const claims: Array<{ readonly claim: Claim<string>; readonly taken: Array<ModelSlot>; done: boolean }> = []
      const key = (e: InboundEntry<string>) => `${e.senderId}/${e.messageId}`
      const queued = () => new Set(model.map((slot) => key(slot.entry)))
      for (const step of program) {
        switch (step.op) {
          case "enqueue": {
            const e = entry(`m${step.message}`, `s${step.sender}`, { progress: step.progress, threadId: "t" })
            const fresh = !queued().has(key(e))
            assert.strictEqual(store.enqueue(e), fresh)
            if (fresh) model.push({ seq: seq++, entry: e })
            break
          }
          case "remove": {
            const target = { senderId: `s${step.sender}`, messageId: `m${step.message}` }
            const removed = store.remove(target)
            const index = model.findIndex((slot) => key(slot.entry) === `${target.senderId}/${target.messageId}`)
            assert.strictEqual(removed?.messageId, index >= 0 ? target.messageId : undefined)
            if (index >= 0) model.splice(index, 1)
            break
          }
          case "claim": {
            const senders = new Set(step.senders.map((s) => `s${s}`))
            const claim = store.claim(() => (e) => senders.has(e.senderId))
            const taken = model.filter((slot) => senders.has(slot.entry.senderId))
            model = model.filter((slot) => !senders.has(slot.entry.senderId))
            assert.deepStrictEqual(ids(claim.entries), taken.map((slot) => slot.entry.messageId))
            claims.push({ claim, taken, done: false })
            break
          }
          case "rollback": {
            const held = claims[step.claim]
            if (held === undefined) break
            held.claim.rollback(step.from)
            if (!held.done) {
              held.done = true
              const present = queued()
              const back = held.taken.slice(step.from).filter((slot) => !present.has(key(slot.entry)))
              model = [...model, ...back].sort((a, b) => a.seq - b.seq)
            }
            break
          }
          case "drop": {
            const dropped = store.dropFinishedProgress(`s${step.sender}`, "t")
            const gone = model.filter((slot) => slot.entry.senderId === `s${step.sender}` && slot.entry.progress === true)
            model = model.filter((slot) => !gone.includes(slot))
            assert.deepStrictEqual(ids(dropped), gone.map((slot) => slot.entry.messageId))
            break
          }
        }
        assert.deepStrictEqual(ids(store.entries()), model.map((slot) => slot.entry.messageId))
        assert.strictEqual(store.size, model.length)
      }
    }), { numRuns: 300 })
  })

  it("rollback puts undelivered entries back in their original places, ahead of later arrivals (C-ORD-29)", () => {
    const store = new IdleQueueStore<string>()
    for (const [id, sender] of [["a", "child"], ["x", "peer"], ["b", "child"], ["y", "peer"], ["c", "child"]] as const) {
      store.enqueue(entry(id, sender))
    }
    const claim = store.claim(() => (e) => e.senderId === "child")
    assert.deepStrictEqual(ids(claim.entries), ["a", "b", "c"])
    assert.deepStrictEqual(ids(store.entries()), ["x", "y"]) // C-ORD-27: the others keep their order
    store.enqueue(entry("z", "peer")) // arrived while the batch was out
    claim.rollback(1) // "a" was delivered
    assert.deepStrictEqual(ids(store.entries()), ["x", "b", "y", "c", "z"])
    claim.rollback(0) // a second rollback changes nothing
    assert.deepStrictEqual(ids(store.entries()), ["x", "b", "y", "c", "z"])
  })

  it("drops only a finished child's progress on its exact thread, never asks, answers or other threads (C-DLV-17)", () => {
    const store = new IdleQueueStore<string>()
    store.enqueue(entry("p1", "child", { progress: true, threadId: "run-1" }))
    store.enqueue(entry("ask", "child", { progress: true, threadId: "run-1", expectsReply: true }))
    store.enqueue(entry("answer", "child", { progress: true, threadId: "run-1", replyTo: "q1" }))
    store.enqueue(entry("other-thread", "child", { progress: true, threadId: "run-2" }))
    store.enqueue(entry("plain", "child", { threadId: "run-1" }))
    store.enqueue(entry("other-sender", "peer", { progress: true, threadId: "run-1" }))
    store.enqueue(entry("p2", "child", { progress: true, threadId: "run-1" }))
    assert.deepStrictEqual(ids(store.dropFinishedProgress("child", "run-1")), ["p1", "p2"])
    assert.deepStrictEqual(ids(store.entries()), ["ask", "answer", "other-thread", "plain", "other-sender"])
  })
})
