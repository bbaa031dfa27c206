/**
 * Review revad probes (merge fixaa, 607cda30): the repeat filter's reopened
 * questions (RecentMessages.ts). Each test FAILS on main as of 607cda30.
 */
import { assert, describe, it } from "@effect/vitest"
import { RecentMessages } from "../src/client/RecentMessages.ts"

const all = () => "all" as const
const none = () => "none" as const

describe("review revad: RecentMessages", () => {
  // AD1. A cancel the broker carried out (`delivered`) ends with the question asked again already read, if it is asked
  // again at all (RecentMessages' header: the broker writes it ahead of the answer). A pair still reopened then is
  // stale (a cancel retried after its first answer was lost with the connection; or a reply whose loss asks nothing
  // again: a memory broker, asker away, reply queued then cancelled, writes the replier no copy) and lets the next
  // copy through.
  it("AD1: a retried cancel answered `delivered` leaves no pass for a later copy of the question", () => {
    const recent = new RecentMessages(16)
    assert.isTrue(recent.firstTime("alice", "q1", all, true))
    recent.replied("r1", "q1", "alice", undefined)
    // First cancel: written, the broker withdraws the reply and asks again; the answer is lost with the connection.
    recent.cancelWritten("r1")
    assert.isTrue(recent.firstTime("alice", "q1", all, true), "the question asked again was dropped")
    recent.cancelEnded("r1", false)
    // The retry on the next connection: the broker answers `delivered` again (cancelled already), asking nothing.
    recent.cancelWritten("r1")
    recent.cancelEnded("r1", true)
    assert.isFalse(recent.firstTime("alice", "q1", all, true), "a later copy of the question (a redelivery) passed a third time")
  })

  it("AD1b: a cancel carried out for an ask that is over (nothing asked again) leaves no pass behind", () => {
    const recent = new RecentMessages(16)
    assert.isTrue(recent.firstTime("alice", "q1", all, true))
    recent.replied("r1", "q1", "alice", undefined)
    recent.cancelWritten("r1")
    recent.cancelEnded("r1", true)
    assert.isFalse(recent.firstTime("alice", "q1", all, true), "a redelivered copy of the answered question passed again")
  })

  // AD2. `askers` keeps the last `capacity` asks while `seen` keeps every pair while confirmations are withheld:
  // a reply by name to an older question (still in `seen`) takes the name as its asker, so its cancel reopens a
  // pair that never comes, and the question asked again is dropped: never re-asked.
  it("AD2: a reply by name to an ask older than the last `capacity` asks still reopens its question on cancel", () => {
    const recent = new RecentMessages(2)
    assert.isTrue(recent.firstTime("alice-id", "q1", none, true))
    assert.isTrue(recent.firstTime("bob-id", "q2", none, true))
    assert.isTrue(recent.firstTime("bob-id", "q3", none, true))
    recent.replied("r1", "q1", "alice", undefined)
    recent.cancelWritten("r1")
    assert.isTrue(recent.firstTime("alice-id", "q1", none, true), "alice's question, asked again after the cancel, was dropped")
  })
})
