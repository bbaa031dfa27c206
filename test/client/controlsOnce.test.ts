/**
 * A cancel or supersede (`message_control`, P73) the broker writes again — a
 * `received-v1` broker gives one this client never confirmed to its next
 * connection (Custody.ts), as it gives mail — reaches `controls` once
 * (RecentControls.ts). In memory, against a fake broker that writes the
 * controls it is told to ahead of each `list` answer. `RecentControls`
 * also tells how a message was withdrawn (`withdrawal`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ControlEvent } from "../../src/client/events.ts"
import { RecentControls } from "../../src/client/RecentControls.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker, subscribe } from "./support.ts"

const SENDER = { id: "dddddddd-3333-4000-8000-00000000000d", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }

const controlFrame = (messageId: string, action: "cancel" | "supersede") => ({
  type: "message_control",
  from: SENDER,
  control: { messageId, action, timestamp: 1, ...(action === "supersede" ? { supersededBy: `${messageId}-2` } : {}) }
})

const label = (event: ControlEvent): string =>
  event._tag === "Control"
    ? `${event.control.action} ${event.control.messageId}`
    : event._tag === "Receipt"
    ? `receipt ${event.receipt.messageId}`
    : `answered elsewhere ${event.messageId}`

describe("a control written twice", () => {
  it.effect("reaches controls once; another action on the same message, or the same action on another, is passed on", () =>
    Effect.gen(function*() {
      // Ahead of each list's answer: the same cancel twice, then a supersede of that message, then a cancel of another.
      const script = [[controlFrame("m0", "cancel")], [controlFrame("m0", "cancel")], [controlFrame("m0", "supersede"), controlFrame("m1", "cancel")]]
      let lists = 0
      const fake = yield* memoryFakeBroker({ beforeList: () => script[lists++] ?? [] })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, "bbbbbbbb-3333-4000-8000-00000000000b", "bob"))
      const controls = yield* subscribe(client.controls, "bob's controls")
      yield* client.connect
      yield* client.list
      yield* client.list
      yield* client.list
      // The last control is published after any copy of the first (one PubSub, in order): seen once it is there.
      yield* controls.next((event) => label(event) === "cancel m1")
      assert.deepStrictEqual(controls.seen().map(label), ["cancel m0", "supersede m0", "cancel m1"])
    }))
})

describe("RecentControls", () => {
  it("forgets the oldest control past its capacity, and only that one", () => {
    const recent = new RecentControls(2)
    const control = (messageId: string) => ({ messageId, action: "cancel" as const, timestamp: 0 })
    assert.isTrue(recent.firstTime("a", control("m0")))
    assert.isTrue(recent.firstTime("a", control("m1")))
    assert.isFalse(recent.firstTime("a", control("m0")))
    assert.isTrue(recent.firstTime("b", control("m0")), "another sender's control of a message with that id")
    // Three seen, capacity two: the oldest, m0 from a, was forgotten.
    assert.isTrue(recent.firstTime("a", control("m0")))
    assert.isFalse(recent.firstTime("b", control("m0")))
  })

  it("tells how a message was withdrawn: by its sender only, a cancel over a supersede, forgotten past its capacity", () => {
    const recent = new RecentControls(2)
    const control = (messageId: string, action: "cancel" | "supersede") => ({ messageId, action, timestamp: 0 })
    assert.isUndefined(recent.withdrawal("a", "m0"), "no control read")
    recent.firstTime("a", control("m0", "supersede"))
    assert.strictEqual(recent.withdrawal("a", "m0"), "supersede")
    assert.isUndefined(recent.withdrawal("b", "m0"), "another sender's message with that id")
    recent.firstTime("a", control("m0", "cancel"))
    assert.strictEqual(recent.withdrawal("a", "m0"), "cancel")
    // Capacity two: the supersede is forgotten first, then the cancel.
    recent.firstTime("a", control("m1", "cancel"))
    assert.strictEqual(recent.withdrawal("a", "m0"), "cancel")
    recent.firstTime("a", control("m2", "cancel"))
    assert.isUndefined(recent.withdrawal("a", "m0"))
    assert.strictEqual(recent.withdrawal("a", "m2"), "cancel")
  })
})
