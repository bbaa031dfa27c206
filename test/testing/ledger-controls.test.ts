/**
 * The ledger's control checks on their own, fed by hand (ledger/controls.ts):
 * a `message_control` read before the message it is about, on its
 * connection or before any copy, is `control-before-message`; one read after
 * it, or about a copy read and confirmed on an earlier connection, is not. A
 * cancel the broker acknowledged before the receiver first read the message
 * is `cancel-unheard` unless a control cancel followed that read (read by
 * the client instance that read the message, on that connection or, the
 * copy not sent again, a later one: sim seed 53031), or the
 * broker began to write that control on the connection of the read and its
 * client closed for good without reading it (sim seed 16890 of
 * `--custody-hold --delivery`: only a control cancel begun there, and only
 * with that client closed, excuses it); one whose
 * message nobody read is the fate `withdrawn`, not a loss. So is one whose
 * answer a broker crash lost, when the next broker's replay record answers a
 * resend of the message `E_DELIVERY_CANCELLED` (sim seed 9848, `--delivery`)
 * — not when the broker refused that cancel, nor when its connection stayed
 * up — and a message a later send superseded, that send acknowledged, never
 * written, no control about it read, after which a connection of its
 * receiver ended (seed 9528); so is one whose superseding send went
 * unanswered on a connection that ended, when the replay record says
 * `E_DELIVERY_SUPERSEDED` (seed 16929) — not when the record says delivered,
 * nor when that connection stayed up. Review revled's cases: one superseded but lost
 * from a live outbox is a `silent-loss` (with `control-before-message` when
 * its control was read); and under `--strict` one written to a connection
 * that died unread, cancelled or superseded before that close, is withdrawn
 * (also when cancelled again after it, answered `delivered` again: the first
 * acknowledgement counts, seed 53118, `--parked-flush --unregister --delivery
 * --strict`; so does a supersede's, when another send supersedes it again
 * after the close), as is one read by a client that closed before its session took it, cancelled
 * before that client's connection ended (seed 10658, `--host-journal --strict`)
 * or with the cancel's control read there before it ended, the acknowledgement
 * coming after (seed 52221, `--host-journal --client-timings --strict`).
 * One cancelled only after that close stays lost-in-flight unless the broker
 * that acknowledged the cancel crashed before its receiver registered with it
 * again (the copy kept for its reader, memory only, went with it: seed 52213,
 * `--reader-return --client-timings --strict`).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const B = "sim-2-b"
const from = { id: A, cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
const one: Message = { id: "m-0001", timestamp: 0, content: { text: "one" } }
const send = JSON.stringify({ type: "send", to: B, message: one })
const acked = JSON.stringify({ type: "delivered", messageId: one.id, delivery: "socket_delivered" })
const cancel = JSON.stringify({ type: "cancel_message", messageId: one.id })
/** The broker's bare answer to a cancel it carried out. */
const cancelled = JSON.stringify({ type: "delivered", messageId: one.id })
const message = JSON.stringify({ type: "message", from, message: one })
const control = (action: "cancel" | "supersede") =>
  JSON.stringify({ type: "message_control", from, control: { messageId: one.id, action, timestamp: 0 } })
const register = JSON.stringify({
  type: "register",
  sessionId: B,
  session: { cwd: "/", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
})
const registered = JSON.stringify({ type: "registered", sessionId: B })

/** A sends B `one` (acknowledged); B is registered on link #2 and, later, #3. */
const world = () => {
  const ledger = new Ledger({ now: () => 0 })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.linkOpened(2, B, "client-b", 0)
  brokerTook(ledger, 2, [register])
  ledger.clientRead(2, [registered])
  ledger.clientWrote(1, [send])
  brokerTook(ledger, 1, [send])
  ledger.clientRead(1, [acked])
  return ledger
}

/** `world` under `--strict` (`strictInFlight`) on the clock `now`, with `one` written to B's link #2. */
const strictWritten = (now: () => number) => {
  const ledger = new Ledger({ now, strictInFlight: true })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.linkOpened(2, B, "client-b", 0)
  brokerTook(ledger, 2, [register])
  ledger.clientRead(2, [registered])
  ledger.clientWrote(1, [send])
  brokerTook(ledger, 1, [send])
  ledger.clientRead(1, [acked])
  ledger.brokerWrote(2, [message])
  return ledger
}

/** A's cancel of `one`, acknowledged. */
const cancelAcknowledged = (ledger: Ledger) => {
  ledger.clientWrote(1, [cancel])
  brokerTook(ledger, 1, [cancel])
  ledger.clientRead(1, [cancelled])
}

/** A's send of `two`, which supersedes `one`. */
const two: Message = { id: "m-0002", timestamp: 0, content: { text: "two" }, supersedes: one.id }
const sendTwo = JSON.stringify({ type: "send", to: B, message: two })

/**
 * A supersedes `one` with `two`, and the broker gives `answer` to it;
 * `two` is then dropped from B's mailbox, and A told so (sim seed 9528).
 */
const superseded = (ledger: Ledger, answer: string) => {
  ledger.clientWrote(1, [sendTwo])
  brokerTook(ledger, 1, [sendTwo])
  ledger.clientRead(1, [answer])
  ledger.clientRead(1, [JSON.stringify({
    type: "message_receipt",
    from: { ...from, id: B },
    receipt: { messageId: two.id, status: "expired", timestamp: 0, detail: "Mailbox capacity evicted the delivery" }
  })])
}

/** The control kinds among the violations found once the ledger finished, and its tally. */
const finished = (ledger: Ledger) => {
  const tally = ledger.finish()
  const kinds = ledger.violations
    .map((violation) => violation.kind)
    .filter((kind) => kind === "control-before-message" || kind === "cancel-unheard")
  return { kinds, tally }
}

describe("Ledger: controls", () => {
  it("a control read after its message on the same connection is no violation", () => {
    const ledger = world()
    ledger.clientRead(2, [message])
    cancelAcknowledged(ledger)
    ledger.clientRead(2, [control("cancel")])
    const { kinds, tally } = finished(ledger)
    expect(kinds).toEqual([])
    expect(tally.cancelsAcknowledged).toBe(1)
    expect(tally.controlsRead).toBe(1)
  })

  it("a control read before its message on the same connection is control-before-message", () => {
    const ledger = world()
    ledger.clientRead(2, [control("supersede"), message])
    expect(finished(ledger).kinds).toEqual(["control-before-message"])
  })

  it("a control on a new connection ahead of the copy re-sent there is control-before-message", () => {
    const ledger = world()
    ledger.clientRead(2, [message])
    ledger.linkOpened(3, B, "client-b2", 0)
    brokerTook(ledger, 3, [register])
    ledger.clientRead(3, [registered, control("supersede"), message])
    expect(finished(ledger).kinds).toEqual(["control-before-message"])
  })

  it("a control on a new connection about a copy read on an earlier one, not sent again, is no violation", () => {
    const ledger = world()
    ledger.clientRead(2, [message])
    ledger.linkOpened(3, B, "client-b2", 0)
    brokerTook(ledger, 3, [register])
    ledger.clientRead(3, [registered, control("supersede")])
    expect(finished(ledger).kinds).toEqual([])
  })

  it("a message first read after its cancel was acknowledged, with no control after it, is cancel-unheard", () => {
    const ledger = world()
    cancelAcknowledged(ledger)
    ledger.clientRead(2, [message])
    expect(finished(ledger).kinds).toEqual(["cancel-unheard"])
  })

  it("a message first read after its cancel was acknowledged, then the control, is no violation", () => {
    const ledger = world()
    cancelAcknowledged(ledger)
    ledger.clientRead(2, [message, control("cancel")])
    expect(finished(ledger).kinds).toEqual([])
  })

  describe("a message first read after its cancel was acknowledged, the connection then dropping before the control (sim seed 53031)", () => {
    /** A's cancel is acknowledged, B's client `client-b` reads `one` on link #2, which drops; link #3 (of `client`) registers. */
    const readThenReconnect = (client: string) => {
      const ledger = world()
      cancelAcknowledged(ledger)
      ledger.clientRead(2, [message])
      ledger.linkClosed(2)
      ledger.linkOpened(3, B, client, 0)
      brokerTook(ledger, 3, [register])
      return ledger
    }

    it("with the control read on the same client's next connection, the copy not sent again, is no violation", () => {
      const ledger = readThenReconnect("client-b")
      ledger.clientRead(3, [registered, control("cancel")])
      expect(finished(ledger).kinds).toEqual([])
    })

    it("with no control on the next connection, is cancel-unheard", () => {
      const ledger = readThenReconnect("client-b")
      ledger.clientRead(3, [registered])
      expect(finished(ledger).kinds).toEqual(["cancel-unheard"])
    })

    it("with the control read only by another client instance, is cancel-unheard", () => {
      const ledger = readThenReconnect("client-b2")
      ledger.clientRead(3, [registered, control("cancel")])
      expect(finished(ledger).kinds).toEqual(["cancel-unheard"])
    })
  })

  describe("a message first read after its cancel was acknowledged, whose client then closed for good (sim seed 16890)", () => {
    /** A's cancel is acknowledged, B reads `one` on link #2, and the broker begins a write of `written` there. */
    const readThenWrite = (written: ReadonlyArray<string>) => {
      const ledger = world()
      cancelAcknowledged(ledger)
      ledger.clientRead(2, [message])
      if (written.length > 0) ledger.brokerWriteStarted(2, written)
      return ledger
    }

    it("with the control cancel begun on that connection and unread there, is no violation", () => {
      const ledger = readThenWrite([control("cancel")])
      ledger.clientClosed("client-b")
      expect(finished(ledger).kinds).toEqual([])
    })

    it("with no control begun on that connection, is cancel-unheard though other output was on its way", () => {
      const ledger = readThenWrite([JSON.stringify({ type: "session_left", sessionId: A })])
      ledger.clientClosed("client-b")
      expect(finished(ledger).kinds).toEqual(["cancel-unheard"])
    })

    it("with only a control supersede begun on that connection, is cancel-unheard", () => {
      const ledger = readThenWrite([control("supersede")])
      ledger.clientClosed("client-b")
      expect(finished(ledger).kinds).toEqual(["cancel-unheard"])
    })

    it("with the control cancel begun on that connection and its client not closed, is cancel-unheard", () => {
      const ledger = readThenWrite([control("cancel")])
      expect(finished(ledger).kinds).toEqual(["cancel-unheard"])
    })

    it("with the control cancel begun on another connection of its session, is cancel-unheard", () => {
      const ledger = world()
      cancelAcknowledged(ledger)
      ledger.clientRead(2, [message])
      ledger.linkOpened(3, B, "client-b", 0)
      ledger.brokerWriteStarted(3, [control("cancel")])
      ledger.clientClosed("client-b")
      expect(finished(ledger).kinds).toEqual(["cancel-unheard"])
    })
  })

  it("a cancelled message no client of its receiver read is withdrawn, not lost", () => {
    const ledger = world()
    cancelAcknowledged(ledger)
    const { kinds, tally } = finished(ledger)
    expect(kinds).toEqual([])
    expect(ledger.violations.map((violation) => violation.kind)).not.toContain("silent-loss")
    expect(tally.withdrawn).toBe(1)
  })

  describe("a cancel whose answer was lost in a broker crash (durable)", () => {
    /** A's `one` to B, acknowledged by broker #1 on link #1 while B is away; A then writes `cancel` if asked, and broker #1 crashes. */
    const crashed = (options: { readonly cancelWritten: boolean; readonly refused?: boolean }) => {
      const ledger = new Ledger({ now: () => 0, durable: true })
      ledger.addSession({ id: A, name: "a", scopeId: undefined })
      ledger.addSession({ id: B, name: "b", scopeId: undefined })
      ledger.linkOpened(1, A, "client-a", 1)
      ledger.clientWrote(1, [send])
      brokerTook(ledger, 1, [send])
      ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: one.id, delivery: "queued" })])
      if (options.cancelWritten) {
        ledger.clientWrote(1, [cancel])
        brokerTook(ledger, 1, [cancel])
      }
      // The broker refused the cancel (a bare `delivery_failed`): A read that answer before the crash.
      if (options.refused === true) {
        ledger.clientRead(1, [JSON.stringify({ type: "delivery_failed", messageId: one.id, reason: "Message cannot be cancelled by this session" })])
      }
      ledger.brokerCrashed(1)
      ledger.linkClosed(1)
      return ledger
    }
    const kindsOf = (ledger: Ledger) => ledger.violations.map((violation) => violation.kind)

    it("its message, which the next broker's replay record says was cancelled, is withdrawn, not a crash-loss", () => {
      const ledger = crashed({ cancelWritten: true })
      expect(ledger.unexplained().map((left) => left.message.id)).toEqual([one.id])
      ledger.recordSaid(one.id, "E_DELIVERY_CANCELLED")
      const tally = ledger.finish()
      expect(kindsOf(ledger)).toEqual([])
      expect(tally.withdrawn).toBe(1)
      expect(tally.lostToCrash).toBe(0)
      expect(tally.cancelsAcknowledged).toBe(0)
    })

    it("its message, which the next broker's replay record still says was queued, is a crash-loss", () => {
      const ledger = crashed({ cancelWritten: true })
      ledger.recordSaid(one.id, "delivered")
      ledger.finish()
      expect(kindsOf(ledger)).toEqual(["crash-loss"])
    })

    it("its message, whose cancel the broker refused before it crashed, is a crash-loss though the record says cancelled", () => {
      const ledger = crashed({ cancelWritten: true, refused: true })
      ledger.recordSaid(one.id, "E_DELIVERY_CANCELLED")
      const tally = ledger.finish()
      expect(kindsOf(ledger)).toEqual(["crash-loss"])
      expect(tally.withdrawn).toBe(0)
    })

    it("a message whose record says cancelled with no cancel from its sender on the wire is a crash-loss", () => {
      const ledger = crashed({ cancelWritten: false })
      ledger.recordSaid(one.id, "E_DELIVERY_CANCELLED")
      ledger.finish()
      expect(kindsOf(ledger)).toEqual(["crash-loss"])
    })
  })

  it("a message superseded by an acknowledged send, never written, no control about it read, after which its receiver's connection ended, is withdrawn, not lost", () => {
    const ledger = world()
    superseded(ledger, JSON.stringify({ type: "delivered", messageId: two.id, delivery: "socket_delivered" }))
    // B's connection ends: `one` goes back from its outbox, superseded, and is not queued again (seed 9528).
    ledger.linkClosed(2)
    ledger.brokerEnded(2)
    const tally = ledger.finish()
    expect(ledger.violations.map((violation) => violation.message)).toEqual([])
    expect(tally.withdrawn).toBe(1)
    expect(tally.failedNotified).toBe(1)
  })

  it("a message whose superseding send was refused, and which no client of its receiver read, is still a silent-loss", () => {
    const ledger = world()
    superseded(ledger, JSON.stringify({
      type: "delivery_failed",
      messageId: two.id,
      reason: "Supersede target is not connected",
      code: "E_SUPERSEDE_TARGET"
    }))
    ledger.finish()
    expect(ledger.violations.map((violation) => violation.kind)).toEqual(["silent-loss"])
  })

  it("a message superseded by a staged send (`delivery_queued`), never written, is a silent-loss though its receiver's connection ended", () => {
    const ledger = world()
    superseded(ledger, JSON.stringify({ type: "delivery_queued", messageId: two.id, threadId: "t-1", deliverAt: 1_000 }))
    ledger.linkClosed(2)
    ledger.brokerEnded(2)
    const tally = ledger.finish()
    expect(ledger.violations.map((violation) => violation.kind)).toEqual(["silent-loss"])
    expect(tally.withdrawn).toBe(0)
  })

  it("a message superseded by an acknowledged send, never written, whose receiver's connection stays live, is a silent-loss", () => {
    const ledger = world()
    superseded(ledger, JSON.stringify({ type: "delivered", messageId: two.id, delivery: "socket_delivered" }))
    const tally = ledger.finish()
    expect(ledger.violations.map((violation) => violation.kind)).toEqual(["silent-loss"])
    expect(tally.withdrawn).toBe(0)
  })

  it("a message superseded by an acknowledged send whose supersede control its live receiver read, the message never, is a silent-loss and control-before-message", () => {
    const ledger = world()
    superseded(ledger, JSON.stringify({ type: "delivered", messageId: two.id, delivery: "socket_delivered" }))
    ledger.clientRead(2, [control("supersede")])
    // B's connection ends later: the control shows `one` was not withdrawn on its way.
    ledger.linkClosed(2)
    ledger.brokerEnded(2)
    const tally = ledger.finish()
    expect(ledger.violations.map((violation) => violation.kind).sort()).toEqual(["control-before-message", "silent-loss"])
    expect(tally.withdrawn).toBe(0)
  })

  describe("a message written to its receiver's connection, which died with it unread (--strict)", () => {
    let now = 0
    const strictWorld = () => {
      now = 0
      return strictWritten(() => now)
    }
    const diedUnread = (ledger: Ledger) => {
      ledger.linkClosed(2)
      ledger.brokerEnded(2)
    }

    it("superseded (acknowledged) before that connection ended, not queued again: withdrawn, not lost-in-flight", () => {
      const ledger = strictWorld()
      superseded(ledger, JSON.stringify({ type: "delivered", messageId: two.id, delivery: "socket_delivered" }))
      diedUnread(ledger)
      const tally = ledger.finish()
      expect(ledger.violations.map((violation) => violation.kind)).toEqual([])
      expect(tally.withdrawn).toBe(1)
    })

    it("cancelled (acknowledged) before that connection ended, not queued again: withdrawn, not lost-in-flight", () => {
      const ledger = strictWorld()
      cancelAcknowledged(ledger)
      diedUnread(ledger)
      const tally = ledger.finish()
      expect(ledger.violations.map((violation) => violation.kind)).toEqual([])
      expect(tally.withdrawn).toBe(1)
    })

    it("cancelled (acknowledged) before that connection ended and cancelled again after it: withdrawn, not lost-in-flight (seed 53118)", () => {
      const ledger = strictWorld()
      cancelAcknowledged(ledger)
      now = 5
      diedUnread(ledger)
      now = 10
      cancelAcknowledged(ledger)
      const tally = ledger.finish()
      expect(ledger.violations.map((violation) => violation.kind)).toEqual([])
      expect(tally.withdrawn).toBe(1)
    })

    it("superseded (acknowledged) before that connection ended and superseded again by another send acknowledged after it: withdrawn, not lost-in-flight", () => {
      const ledger = strictWorld()
      superseded(ledger, JSON.stringify({ type: "delivered", messageId: two.id, delivery: "socket_delivered" }))
      now = 5
      diedUnread(ledger)
      now = 10
      const three: Message = { id: "m-0003", timestamp: 0, content: { text: "three" }, supersedes: one.id }
      const sendThree = JSON.stringify({ type: "send", to: B, message: three })
      ledger.clientWrote(1, [sendThree])
      brokerTook(ledger, 1, [sendThree])
      ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: three.id, delivery: "queued" })])
      ledger.clientRead(1, [JSON.stringify({
        type: "message_receipt",
        from: { ...from, id: B },
        receipt: { messageId: three.id, status: "expired", timestamp: 0, detail: "Mailbox capacity evicted the delivery" }
      })])
      const tally = ledger.finish()
      expect(ledger.violations.map((violation) => violation.kind)).toEqual([])
      expect(tally.withdrawn).toBe(1)
    })

    it("cancelled only after that connection ended: lost-in-flight", () => {
      const ledger = strictWorld()
      diedUnread(ledger)
      now = 5
      cancelAcknowledged(ledger)
      ledger.finish()
      expect(ledger.violations.map((violation) => violation.kind)).toEqual(["lost-in-flight"])
    })

    /** B's `register` on a new link #3 to the same broker, read by it. */
    const backOnLink3 = (ledger: Ledger) => {
      ledger.linkOpened(3, B, "client-b", 0)
      brokerTook(ledger, 3, [register])
      ledger.clientRead(3, [registered])
    }

    it("cancelled only after that connection ended, by a broker that then crashed before B came back: withdrawn, not lost-in-flight (seed 52213)", () => {
      const ledger = strictWorld()
      diedUnread(ledger)
      now = 5
      cancelAcknowledged(ledger)
      now = 10
      ledger.brokerCrashed(0)
      ledger.linkClosed(1)
      const tally = ledger.finish()
      expect(ledger.violations.map((violation) => violation.kind)).toEqual([])
      expect(tally.withdrawn).toBe(1)
    })

    it("cancelled only after that connection ended, by a broker B registered with again before it crashed: lost-in-flight", () => {
      const ledger = strictWorld()
      diedUnread(ledger)
      now = 5
      cancelAcknowledged(ledger)
      now = 7
      backOnLink3(ledger)
      now = 10
      ledger.brokerCrashed(0)
      ledger.linkClosed(1)
      ledger.linkClosed(3)
      ledger.finish()
      expect(ledger.violations.map((violation) => violation.kind)).toEqual(["lost-in-flight"])
    })
  })

  describe("a message read by its receiver's client, which closed before its session took it (--strict)", () => {
    let now = 0
    /**
     * A's `one` written to B's link #2 and read there; `when` has A cancel it (acknowledged) before #2 ends,
     * after, or write the cancel before, B read its control on #2, and the answer come only after #2 ended.
     */
    const readThenClosed = (when: "before the close" | "after the close" | "control read, answered after the close" | "none") => {
      now = 0
      const ledger = strictWritten(() => now)
      ledger.clientRead(2, [message])
      if (when === "before the close") cancelAcknowledged(ledger)
      if (when === "control read, answered after the close") {
        ledger.clientWrote(1, [cancel])
        brokerTook(ledger, 1, [cancel])
        ledger.clientRead(2, [control("cancel")])
      }
      now = 5
      ledger.clientClosed("client-b")
      ledger.linkClosed(2)
      ledger.brokerEnded(2)
      now = 10
      if (when === "after the close") cancelAcknowledged(ledger)
      if (when === "control read, answered after the close") ledger.clientRead(1, [cancelled])
      const tally = ledger.finish()
      return { kinds: ledger.violations.map((violation) => violation.kind), tally }
    }

    it("cancelled (acknowledged) before that connection ended: withdrawn, not lost-in-flight (seed 10658)", () => {
      const { kinds, tally } = readThenClosed("before the close")
      expect(kinds).toEqual([])
      expect(tally.withdrawn).toBe(1)
    })

    it("cancelled only after that connection ended: lost-in-flight", () => {
      expect(readThenClosed("after the close").kinds).toEqual(["lost-in-flight"])
    })

    it("its cancel's control read on that connection, the cancel acknowledged only after it ended: withdrawn, not lost-in-flight (seed 52221)", () => {
      const { kinds, tally } = readThenClosed("control read, answered after the close")
      expect(kinds).toEqual([])
      expect(tally.withdrawn).toBe(1)
    })

    it("not cancelled: lost-in-flight", () => {
      expect(readThenClosed("none").kinds).toEqual(["lost-in-flight"])
    })
  })

  describe("a supersede whose answer was lost (sim seed 16929, `--custody-hold --delivery`)", () => {
    /**
     * `world`, then A writes `two` (superseding `one`) on link #1 and the broker reads it; A never reads
     * an answer. A's link #1 closes if `senderLeft` (A stopped), then B's link #2 ends (`one` goes back
     * from its outbox, superseded, and is not queued again), and the replay record answers a resend of
     * `one` with `recordSays`.
     */
    const unanswered = (options: { readonly senderLeft: boolean; readonly recordSays: string }) => {
      const ledger = world()
      ledger.clientWrote(1, [sendTwo])
      brokerTook(ledger, 1, [sendTwo])
      if (options.senderLeft) ledger.linkClosed(1)
      ledger.linkClosed(2)
      ledger.brokerEnded(2)
      expect(ledger.unexplained().map((left) => left.message.id)).toEqual([one.id])
      ledger.recordSaid(one.id, options.recordSays)
      const tally = ledger.finish()
      return { kinds: ledger.violations.map((violation) => violation.kind), tally }
    }

    it("its message, which the record says was superseded, is withdrawn, not a silent-loss", () => {
      const { kinds, tally } = unanswered({ senderLeft: true, recordSays: "E_DELIVERY_SUPERSEDED" })
      expect(kinds).toEqual([])
      expect(tally.withdrawn).toBe(1)
    })

    it("its message, which the record still says was delivered, is a silent-loss", () => {
      const { kinds, tally } = unanswered({ senderLeft: true, recordSays: "delivered" })
      expect(kinds).toEqual(["silent-loss"])
      expect(tally.withdrawn).toBe(0)
    })

    it("its message, the supersede unanswered on a connection that stays up, is a silent-loss though the record says superseded", () => {
      const { kinds, tally } = unanswered({ senderLeft: false, recordSays: "E_DELIVERY_SUPERSEDED" })
      expect(kinds).toEqual(["silent-loss"])
      expect(tally.withdrawn).toBe(0)
    })
  })

  it("a message whose sender's cancel is unanswered on a connection that stays up, the record saying cancelled, no crash, is a silent-loss", () => {
    const ledger = new Ledger({ now: () => 0 })
    ledger.addSession({ id: A, name: "a", scopeId: undefined })
    ledger.addSession({ id: B, name: "b", scopeId: undefined })
    ledger.linkOpened(1, A, "client-a", 0)
    ledger.clientWrote(1, [send])
    brokerTook(ledger, 1, [send])
    ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: one.id, delivery: "queued" })])
    ledger.clientWrote(1, [cancel])
    brokerTook(ledger, 1, [cancel])
    ledger.recordSaid(one.id, "E_DELIVERY_CANCELLED")
    const tally = ledger.finish()
    expect(ledger.violations.map((violation) => violation.kind)).toEqual(["silent-loss"])
    expect(tally.withdrawn).toBe(0)
  })
})
