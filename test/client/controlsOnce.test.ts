/**
 * A cancel or supersede (`message_control`, P73) the broker writes again — a
 * `received-v1` broker gives one this client never confirmed to its next
 * connection (Custody.ts), as it gives mail — reaches `controls` once
 * (RecentControls.ts). In memory, against a fake broker that writes the
 * controls it is told to ahead of each `list` answer. `RecentControls`
 * also tells how a message was withdrawn (`withdrawal`): of one message, not
 * of its (sender, id) for ever — a message read after a control of its pair
 * is a new one under a reused id (review revax AX-B1), and a control is
 * remembered for 30 days from its first read, on the TestClock here.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import type { ControlEvent } from "../../src/client/events.ts"
import { CONTROL_KEPT_MS, RecentControls } from "../../src/client/RecentControls.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker, subscribe } from "./support.ts"

const SENDER = { id: "dddddddd-3333-4000-8000-00000000000d", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }

const OTHER = { ...SENDER, id: "eeeeeeee-3333-4000-8000-00000000000e" }

const controlFrame = (messageId: string, action: "cancel" | "supersede") => ({
  type: "message_control",
  from: SENDER,
  control: { messageId, action, timestamp: 1, ...(action === "supersede" ? { supersededBy: `${messageId}-2` } : {}) }
})

const messageFrame = (messageId: string, text: string) => ({
  type: "message",
  from: SENDER,
  message: { id: messageId, timestamp: 1, content: { text } }
})

const HOUR = 60 * 60 * 1000

/** The time a control is remembered, as docs/client.md states it (not the constant the code uses). */
const THIRTY_DAYS = 30 * 24 * HOUR

type Frame = { readonly type: string; readonly [key: string]: unknown }

/**
 * Bob's client of a fake broker that writes the frames `listAfter` is given ahead of its list's answer, so
 * they were read when it returns. Its liveness probe (a list) is put off past the longest clock adjustment
 * here, so the TestClock moves no probe through the script.
 */
const scriptedClient = Effect.gen(function*() {
  let script: ReadonlyArray<Frame> = []
  const fake = yield* memoryFakeBroker({
    beforeList: () => {
      const frames = script
      script = []
      return frames
    }
  })
  const { client } = yield* makeMemoryClient(
    memoryClientOptions(fake, "bbbbbbbb-3333-4000-8000-00000000000b", "bob", { livenessIntervalMs: 2 * CONTROL_KEPT_MS })
  )
  const controls = yield* subscribe(client.controls, "bob's controls")
  yield* client.connect
  const listAfter = (frames: ReadonlyArray<Frame>) =>
    Effect.suspend(() => {
      script = frames
      return Effect.asVoid(client.list)
    })
  return { client, controls, listAfter }
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

describe("a control names one message, not its id for ever (review revax AX-B1)", () => {
  it.effect("a new message its sender sent under a cancelled message's id is not withdrawn, and its own cancel is passed on", () =>
    Effect.gen(function*() {
      // m0 and its cancel; hours later, past the 1,024 messages the client remembers (RecentMessages: else it drops
      // a new m0 as a copy), m0 again, a new message; then a cancel of that one.
      const others = Array.from({ length: 1024 }, (_, i) => ({ ...messageFrame(`other-${i}`, "filler"), from: OTHER }))
      const { client, controls, listAfter } = yield* scriptedClient
      yield* listAfter([messageFrame("m0", "first"), controlFrame("m0", "cancel")])
      assert.strictEqual(yield* client.withdrawal(SENDER.id, "m0"), "cancel", "setup: the first m0 was cancelled")
      yield* TestClock.adjust(2 * HOUR)
      yield* listAfter([...others, messageFrame("m0", "a new message under the same id")])
      assert.isUndefined(yield* client.withdrawal(SENDER.id, "m0"), "the new m0 was taken as withdrawn by the old one's cancel")
      yield* listAfter([controlFrame("m0", "cancel")])
      yield* controls.next((event) => label(event) === "cancel m0")
      yield* controls.next((event) => label(event) === "cancel m0")
      assert.deepStrictEqual(controls.seen().map(label), ["cancel m0", "cancel m0"], "the new m0's cancel was dropped as a copy")
      assert.strictEqual(yield* client.withdrawal(SENDER.id, "m0"), "cancel")
    }))

  it.effect("a control is remembered for 30 days from when it was first read: given again within them it is dropped, after them passed on", () =>
    Effect.gen(function*() {
      const { client, controls, listAfter } = yield* scriptedClient
      yield* listAfter([controlFrame("m0", "cancel")])
      yield* TestClock.adjust(THIRTY_DAYS - 1)
      assert.strictEqual(yield* client.withdrawal(SENDER.id, "m0"), "cancel", "forgotten before its time")
      // Given again within the 30 days (a marker behind it: once seen, a second cancel of m0 was published).
      yield* listAfter([controlFrame("m0", "cancel"), controlFrame("marker-1", "cancel")])
      yield* controls.next((event) => label(event) === "cancel marker-1")
      assert.deepStrictEqual(controls.seen().map(label), ["cancel m0", "cancel marker-1"], "passed on twice within its time")
      // Counted from the first read, not renewed by the copy.
      yield* TestClock.adjust(1)
      assert.isUndefined(yield* client.withdrawal(SENDER.id, "m0"), "remembered past its time")
      // The same cancel given again past it is passed on again: nothing remembers it.
      yield* listAfter([controlFrame("m0", "cancel"), controlFrame("marker-2", "cancel")])
      yield* controls.next((event) => label(event) === "cancel marker-2")
      assert.deepStrictEqual(controls.seen().map(label), ["cancel m0", "cancel marker-1", "cancel m0", "cancel marker-2"])
    }))
})

describe("RecentControls", () => {
  it("does not count, for a message the broker received after it, a control the broker stamped before (revbi BI2)", () => {
    const recent = new RecentControls()
    recent.firstTime("a", { messageId: "m0", action: "cancel", timestamp: 100 }, 0)
    assert.isUndefined(recent.withdrawal("a", "m0", 0, 101), "an earlier message's cancel withdrew a newer one")
    assert.strictEqual(recent.withdrawal("a", "m0", 0, 100), "cancel", "stamped as the message was received")
    assert.strictEqual(recent.withdrawal("a", "m0", 0, 40), "cancel")
    assert.strictEqual(recent.withdrawal("a", "m0", 0), "cancel", "no receive stamp: as before")
  })

  it("passes on a control stamped later than the one remembered under its (sender, id, action), once (revbm BM2)", () => {
    const HOUR = 60 * 60 * 1000
    const recent = new RecentControls()
    // At registration, an OLD m-1's cancel given again (the broker stamped it long ago); the new m-1, restored from the
    // host's journal (received by the broker at 2 h), was never read by this client, so nothing forgets that cancel.
    assert.isTrue(recent.firstTime("c", { messageId: "m-1", action: "cancel", timestamp: 0 }, 3 * HOUR))
    assert.isUndefined(recent.withdrawal("c", "m-1", 3 * HOUR, 2 * HOUR), "setup: the old cancel withdrew the new m-1")
    // The sender cancels the NEW m-1, stamped 3 h: another control, not a copy of the old one.
    const newCancel = { messageId: "m-1", action: "cancel" as const, timestamp: 3 * HOUR }
    assert.isTrue(recent.firstTime("c", newCancel, 3 * HOUR + 1), "the new message's cancel was dropped as a copy of the old one's")
    assert.strictEqual(recent.withdrawal("c", "m-1", 3 * HOUR + 1, 2 * HOUR), "cancel")
    // The same cancel given again (its stamp unchanged), or the old one given again: copies, dropped.
    assert.isFalse(recent.firstTime("c", newCancel, 3 * HOUR + 2), "a control given again was passed on twice")
    assert.isFalse(recent.firstTime("c", { messageId: "m-1", action: "cancel", timestamp: 0 }, 3 * HOUR + 3))
  })

  it("forgets the oldest control past its capacity, and only that one", () => {
    const recent = new RecentControls(2)
    const control = (messageId: string) => ({ messageId, action: "cancel" as const, timestamp: 0 })
    assert.isTrue(recent.firstTime("a", control("m0"), 0))
    assert.isTrue(recent.firstTime("a", control("m1"), 0))
    assert.isFalse(recent.firstTime("a", control("m0"), 0))
    assert.isTrue(recent.firstTime("b", control("m0"), 0), "another sender's control of a message with that id")
    // Three seen, capacity two: the oldest, m0 from a, was forgotten.
    assert.isTrue(recent.firstTime("a", control("m0"), 0))
    assert.isFalse(recent.firstTime("b", control("m0"), 0))
  })

  it("tells how a message was withdrawn: by its sender only, a cancel over a supersede, forgotten past its capacity", () => {
    const recent = new RecentControls(2)
    const control = (messageId: string, action: "cancel" | "supersede") => ({ messageId, action, timestamp: 0 })
    assert.isUndefined(recent.withdrawal("a", "m0", 0), "no control read")
    recent.firstTime("a", control("m0", "supersede"), 0)
    assert.strictEqual(recent.withdrawal("a", "m0", 0), "supersede")
    assert.isUndefined(recent.withdrawal("b", "m0", 0), "another sender's message with that id")
    recent.firstTime("a", control("m0", "cancel"), 0)
    assert.strictEqual(recent.withdrawal("a", "m0", 0), "cancel")
    // Capacity two: the supersede is forgotten first, then the cancel.
    recent.firstTime("a", control("m1", "cancel"), 0)
    assert.strictEqual(recent.withdrawal("a", "m0", 0), "cancel")
    recent.firstTime("a", control("m2", "cancel"), 0)
    assert.isUndefined(recent.withdrawal("a", "m0", 0))
    assert.strictEqual(recent.withdrawal("a", "m2", 0), "cancel")
  })
})
