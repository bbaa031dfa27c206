/**
 * Review reve (merge "fixst", W1): `health`/`list` frames a reader handles
 * while its output is parked are never answered ahead of an earlier such
 * frame (PeerReader.whileHeldBack, protocol.md). When the drainer's offer
 * lets the last parked `list` answer go, `drainParked` yields before the
 * reader answers the `list` frames it held behind that answer
 * (PeerReader.answerHeldReads): a `list` read in that window finds no parked
 * answer, and was answered at once, ahead of the `list` held before it. The
 * reader now holds `health`/`list` while its held frames hold one (a count,
 * `heldReads`). Driven by hand (handRouter.ts): the drainer's offer is the
 * test's (`tryDrain`), and a batch read right after it stands for the window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Router } from "../../src/broker/Router.ts"
import { isFrameDecodeError, parseFrameText } from "../../src/protocol/decode.ts"
import { frameText } from "../../src/protocol/framing.ts"
import { message } from "../support/broker.ts"
import { typedSessions } from "../support/frameTypes.ts"
import { handRouter } from "../support/handRouter.ts"

const read = (peer: Peer, frames: ReadonlyArray<Record<string, unknown>>): void =>
  peer.reader.frames(frames.map((frame) => JSON.stringify(frame)))

/** The `requestId`s of the `sessions` answers `peer`'s writer takes now, in order. */
const answeredLists = (router: Router, peer: Peer): Array<string> =>
  router.output.writes.takeForWrite(peer).frames.flatMap((frame) => {
    const parsed = parseFrameText(frameText(frame))
    return !isFrameDecodeError(parsed) && parsed.type === "sessions" && typeof parsed.requestId === "string"
      ? [parsed.requestId]
      : []
  })

describe("a list read while the drainer yields after the last parked list answer left", () => {
  it.effect("is not answered ahead of a list held before it", () =>
    Effect.gen(function*() {
      const { attach, batch, router, tryDrain } = yield* handRouter({ outboxCapacity: 2 })
      const session = typedSessions({ attach, batch })
      const asker = session("asker", [])
      session("slow", [])
      const bystander = session("bystander", [])
      // The asker's outbox is full of the bystander's mail; its sends to `slow` (which does not read) are parked.
      batch(bystander.peer, Array.from({ length: 6 }, (_, i) => ({ type: "send", to: "asker", message: message(`mail ${i}`) })))
      const parked = batch(asker.peer, Array.from({ length: 8 }, (_, i) => ({ type: "send", to: "slow", message: message(`m${i}`) })))
      assert.isTrue(parked, "nothing was parked: the test sets up nothing")
      const answered: Array<string> = []
      // L1 meets the full outbox: its answer is parked behind the sends to `slow`. L2 is held behind it.
      read(asker.peer, [{ type: "list", requestId: "L1", limit: 1 }])
      read(asker.peer, [{ type: "list", requestId: "L2", limit: 1 }])
      // The asker reads; its drainer offers the L1 answer ahead of the sends (the last parked list answer).
      for (let round = 0; round < 4 && !answered.includes("L1"); round++) {
        answered.push(...answeredLists(router, asker.peer))
        while (tryDrain(bystander.peer)) continue
        tryDrain(asker.peer)
        answered.push(...answeredLists(router, asker.peer))
      }
      assert.include(answered, "L1", "the L1 answer did not go ahead: the test sets up nothing")
      assert.isTrue(asker.peer.parked.length > 0, "the sends to slow still wait")
      // The window before answerHeldReads: L3 comes in.
      read(asker.peer, [{ type: "list", requestId: "L3", limit: 1 }])
      answered.push(...answeredLists(router, asker.peer))
      assert.notInclude(answered, "L3", `L3 answered while L2, sent before it, is still held: ${answered.join(", ")}`)
    }))
})
