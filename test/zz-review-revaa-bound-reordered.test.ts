/**
 * Review revaa AA3 (probe, fails on main at 11b45496; edge: needs more than
 * `capacity` unconfirmed messages): the question a client answered can be
 * the message its confirmations stop at (`ConfirmBound`, the oldest it has
 * not handled under `confirmWhenHandled`). `cancelWritten` takes that pair
 * out, and `cancelAnswered(…, false)` adds it back at the END of the order:
 * `forget` then never meets its stop where it belongs and forgets pairs of
 * messages read after the bound — unconfirmed, so a reconnect brings them
 * again and they pass as new.
 */
import { assert, describe, it } from "@effect/vitest"
import type { InboundMessage } from "../src/client/events.ts"
import { RecentMessages } from "../src/client/RecentMessages.ts"
import { message } from "./support/broker.ts"

const ALICE = { id: "alice", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }

describe("review revaa AA3: a refused cancel of the reply to the bound question", () => {
  it("keeps the messages read after the bound (unconfirmed) repeats", () => {
    const recent = new RecentMessages(2)
    const question: InboundMessage = { from: ALICE, message: message("q?", { expectsReply: true }) }
    // Nothing is confirmed from the question on: it is the oldest unhandled message.
    const bound = () => question
    assert.isTrue(recent.firstTime("alice", question.message.id, bound))
    recent.replied("r1", "alice", question.message.id)
    assert.isTrue(recent.firstTime("alice", "m2", bound))
    recent.cancelWritten("r1")
    recent.cancelAnswered("r1", false) // the reply stands
    assert.isTrue(recent.firstTime("alice", "m3", bound))
    // m2 and m3 were read after the bound: unconfirmed, a reconnect delivers them again.
    assert.isFalse(recent.firstTime("alice", "m2", bound), "m2, unconfirmed and delivered again, passed as new")
    assert.isFalse(recent.firstTime("alice", "m3", bound), "m3, unconfirmed and delivered again, passed as new")
  })
})
