/**
 * A message whose control (P73 cancel) is read
 * BEFORE the message itself, in a generation whose host refuses it, is
 * restored by the next generation (a new client that never read the cancel)
 * from pi's real journal (the pi host over test/pi/hostRig.ts: `checkpoint`,
 * `withdrawn`, `undelivered` = journal.ts `undeliveredIn`). pi's scan now
 * applies an `intercom_withdrawn` entry only to checkpoints saved before it,
 * so this holds only because src/session/Inbound.ts `handOver` tells the
 * journal again (`waiting`) once the message was checkpointed; the save at
 * the control's own read is dropped by the pi host (nothing handed yet).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { WITHDRAWN_ENTRY } from "../../src/pi/entries.ts"
import { makePiHostRig } from "../pi/hostRig.ts"
import { B, C, inboundMessage, makeFakeClient, makeRecordingHost, SELF, sessionGeneration, settle } from "./support.ts"

describe("control first, then its message, restored from pi's journal", () => {
  it.effect("a message cancelled before it was read, refused by its host, is restored by the next generation passive, marked withdrawn", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig(SELF.id)
      const journal = rig.host.journal
      if (journal === undefined) throw new Error("setup: the pi host has a journal")
      const identity = { name: "self", cwd: "/work", model: "test-model" }

      const client = yield* makeFakeClient(SELF.id)
      client.sessions = [SELF, B, C]
      const first = yield* makeRecordingHost(identity)
      first.failDeliveries = 1_000
      const one = yield* sessionGeneration({ ...first.service, journal }, client)
      // The client read the message, then its cancel; the control fiber handles the cancel first (pushReadFirst).
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "m-1", action: "cancel", timestamp: 0 } })
      yield* settle
      yield* client.pushReadFirst(inboundMessage(C, "m-1", "please delete the branch"))
      yield* settle
      const kinds = rig.entries.map((entry) => entry.customType)
      assert.strictEqual(kinds.at(-1), WITHDRAWN_ENTRY, `the withdrawal is saved after the checkpoint: ${kinds.join(", ")}`)
      yield* one.close

      const next = yield* makeFakeClient(SELF.id)
      next.sessions = [SELF, B, C]
      const second = yield* makeRecordingHost(identity)
      const two = yield* sessionGeneration({ ...second.service, journal }, next)
      yield* settle
      const handed = yield* Queue.take(second.inbox)
      assert.strictEqual(handed.message.id, "m-1")
      assert.strictEqual(handed.intent, "passive", "restored live: C had cancelled it")
      assert.include(handed.text, "Withdrawn:")
      yield* two.close
    }))
})
