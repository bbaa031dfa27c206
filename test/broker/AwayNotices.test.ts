/**
 * AwayNotices on its own: the bounds on notices owed to absent senders, the
 * senders owed nothing, and a list's age at expiry (the integration cases,
 * with a store and a restart, are owed-notices.test.ts's).
 */
import { describe, expect, it } from "@effect/vitest"
import { AwayNotices, MAX_OWED_NOTICES, MAX_OWED_PER_SENDER } from "../../src/broker/AwayNotices.ts"

const make = (ended: ReadonlySet<string> = new Set()) => {
  const logged: Array<string> = []
  const owed = new AwayNotices({ journal: undefined, log: (_level, message) => logged.push(message) }, (key) => ended.has(key))
  return { owed, logged }
}

describe("AwayNotices", () => {
  it("a sender's notices come back in the order owed, once", () => {
    const { owed } = make()
    for (const [i, frame] of ["a", "b", "c"].entries()) owed.owe(owed.issue("alice", frame, 10 + i))
    expect(owed.count).toBe(3)
    expect(owed.take("alice")?.map((n) => n.frame)).toEqual(["a", "b", "c"])
    expect(owed.count).toBe(0)
    expect(owed.take("alice")).toBeUndefined()
  })

  it(`keeps ${MAX_OWED_PER_SENDER} notices per sender: the next is given up and logged, another sender's is kept`, () => {
    const { owed, logged } = make()
    for (let i = 0; i <= MAX_OWED_PER_SENDER; i++) owed.owe(owed.issue("alice", `n${i}`, i))
    owed.owe(owed.issue("bob", "b", 0))
    expect(owed.take("alice")?.length).toBe(MAX_OWED_PER_SENDER)
    expect(owed.take("bob")?.length).toBe(1)
    expect(logged).toHaveLength(1)
    expect(logged[0]).toContain("was not kept")
  })

  it(`givesUp: false below ${MAX_OWED_PER_SENDER} for the sender, then true with the drop logged; false for an ended sender`, () => {
    const { owed, logged } = make(new Set(["gone"]))
    for (let i = 0; i < MAX_OWED_PER_SENDER; i++) {
      expect(owed.givesUp("alice", i)).toBe(false)
      owed.owe(owed.issue("alice", `n${i}`, i))
    }
    expect(logged).toHaveLength(0)
    expect(owed.givesUp("alice", MAX_OWED_PER_SENDER)).toBe(true)
    expect(logged).toEqual([expect.stringContaining("was not kept")])
    expect(owed.givesUp("bob", MAX_OWED_PER_SENDER)).toBe(false)
    expect(owed.count).toBe(MAX_OWED_PER_SENDER)
    // Past the overall bound: a sender owed nothing yet is given up, but an ended one is not (`owe` forgets silently).
    for (let s = 1; s < MAX_OWED_NOTICES / MAX_OWED_PER_SENDER; s++) {
      for (let i = 0; i < MAX_OWED_PER_SENDER; i++) owed.owe(owed.issue(`s${s}`, "n", MAX_OWED_PER_SENDER))
    }
    expect(owed.givesUp("late", MAX_OWED_PER_SENDER)).toBe(true)
    expect(owed.givesUp("gone", MAX_OWED_PER_SENDER)).toBe(false)
    expect(logged).toHaveLength(2)
  })

  it("past 4,096 senders owed, the notices of the sender owed first are given up and the drop logged", () => {
    const { owed, logged } = make()
    for (let s = 0; s <= 4096; s++) owed.owe(owed.issue(`s${s}`, "n", s))
    expect(owed.take("s0")).toBeUndefined()
    expect(owed.take("s1")?.length).toBe(1)
    expect(owed.take("s4096")?.length).toBe(1)
    expect(logged).toEqual([expect.stringContaining("4096 absent senders at most")])
  })

  it(`keeps ${MAX_OWED_NOTICES} notices overall`, () => {
    const { owed, logged } = make()
    const senders = MAX_OWED_NOTICES / MAX_OWED_PER_SENDER
    for (let s = 0; s < senders; s++) {
      for (let i = 0; i < MAX_OWED_PER_SENDER; i++) owed.owe(owed.issue(`s${s}`, "n", s))
    }
    expect(owed.count).toBe(MAX_OWED_NOTICES)
    owed.owe(owed.issue("late", "n", senders))
    expect(owed.count).toBe(MAX_OWED_NOTICES)
    expect(owed.take("late")).toBeUndefined()
    expect(logged).toHaveLength(1)
  })

  it("owes nothing to a sender that ended for good", () => {
    const { owed } = make(new Set(["gone"]))
    owed.owe(owed.issue("gone", "n", 0))
    expect(owed.count).toBe(0)
    expect(owed.oldestAt).toBeUndefined()
  })

  it("at expiry the notices past the cutoff go and younger ones of the same sender stay owed, with their own age", () => {
    const { owed } = make()
    owed.owe(owed.issue("alice", "old", 0))
    owed.owe(owed.issue("alice", "young", 50))
    expect(owed.oldestAt).toBe(0)
    owed.expire(10)
    expect(owed.count).toBe(1)
    expect(owed.oldestAt).toBe(50)
    expect(owed.take("alice")?.map((n) => n.frame)).toEqual(["young"])
  })
})
