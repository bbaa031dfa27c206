/**
 * review revz Z2 probe: RecentMessages.replyLost forgets every pair whose
 * message id is the ask's id, whoever sent it (`replied` keeps the ask's id
 * only, not its sender). Message ids are chosen by each sender, so another
 * sender's message with that id loses its repeat filter too: its redelivery
 * passes and the consumer sees it twice.
 */
import { assert, describe, it } from "@effect/vitest"
import { RecentMessages } from "../src/client/RecentMessages.ts"

describe("revz Z2: a lost reply forgets only its own question's pair", () => {
  it("another sender's message with the same id is still dropped as a repeat", () => {
    const recent = new RecentMessages(16)
    const bound = () => "all" as const
    assert.isTrue(recent.firstTime("alice", "m1", bound))
    assert.isTrue(recent.firstTime("carol", "m1", bound))
    recent.replied("r1", "m1") // bob answered alice's m1
    recent.replyLost("r1")
    assert.isTrue(recent.firstTime("alice", "m1", bound), "alice's question, asked again, passes")
    assert.isFalse(recent.firstTime("carol", "m1", bound), "carol's m1, redelivered, passed as new")
  })
})
