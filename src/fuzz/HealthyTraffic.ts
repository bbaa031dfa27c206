/**
 * Size: about 670 lines, one closure over the healthy sessions' shared ledger (sent, received,
 * live); its frame checks and its traffic read and write that same state. Splitting
 * the checks from the traffic needs that state passed explicitly: a noted follow-up.
 *
 * The healthy sessions of a fuzz campaign, and the promises they check.
 *
 * A and B stay connected and keep exchanging messages, asks (answered by the
 * other side), receipts (every healthy message is receipted by its
 * receiver), cancels and lists; A is a base pi-intercom client, B pages its
 * lists (`list-page-v1`). C comes and goes (each return is a new
 * registration, after whatever registered meanwhile): A and B mail it while
 * it is away and message it while it is back, and their lists must name it
 * whenever it is there. Message ids are simple
 * counters (`<prefix>-a-17`), as a careless client's would be, and the
 * attackers are told them (`HealthyView`), so colliding ids are tried on
 * purpose.
 *
 * Every frame a healthy session reads is measured (at most 1 MiB), decoded
 * with the strict broker-frame Schema (P04), and checked as it arrives: a
 * healthy message must come from the session that sent it, once, in order,
 * with the text it was sent with;
 * an answer, receipt or control must belong to something a healthy session
 * did. `finish` stops the traffic, runs three rounds of round trips (after
 * them every message, receipt and control caused by the traffic has been
 * read), and checks that nothing acknowledged was lost.
 */
import { Deferred, Duration, Effect, Fiber, Option, Queue, Schedule, type Scope } from "effect"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { decodeBrokerFrameText, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode } from "../protocol/delivery.ts"
import { LIST_PAGE_V1 } from "../protocol/features.ts"
import type { BrokerFrame } from "../protocol/frames.ts"
import type { Prng } from "../testing/Prng.ts"
import type { Findings } from "./Findings.ts"
import type { MeteredFrame } from "./FrameMeter.ts"
import { openRaw, type RawConnection } from "./RawConnection.ts"
import type { Tally } from "./Tally.ts"

/** How long a healthy session waits for an answer before it reports the broker stalled. */
const ANSWER_TIMEOUT = Duration.seconds(10)

type FrameOf<T extends BrokerFrame["type"]> = Extract<BrokerFrame, { readonly type: T }>
type Ack = FrameOf<"delivered"> | FrameOf<"delivery_failed">

/** What the attackers may know about the healthy sessions: the fuzzer's oracle for colliding ids. */
export interface HealthyView {
  /** The scope the healthy sessions live in. */
  readonly scopeId: string
  /** Their session ids (A, B, C). */
  readonly sessionIds: ReadonlyArray<string>
  /** Their names. */
  readonly names: ReadonlyArray<string>
  /** Message ids the healthy sessions used last (sends, asks, replies, mail). */
  readonly recentIds: () => ReadonlyArray<string>
  /** Asks waiting for their answer. */
  readonly openAsks: () => ReadonlyArray<string>
  /** Mail queued for C while it is away. */
  readonly queuedIds: () => ReadonlyArray<string>
}

/** The healthy side of a campaign. */
export interface HealthyTraffic {
  readonly view: HealthyView
  /** Registers A, B and C, and lets C leave. */
  readonly start: Effect.Effect<void, never, Scope.Scope>
  /** Starts A's and B's traffic and C's comings and goings, until `finish`. */
  readonly run: Effect.Effect<void, never, Scope.Scope>
  /**
   * Stops the traffic, waits until everything it caused has been read (the
   * final round trips), and checks for losses. True when it did; false when
   * the broker had not answered all of it within `timeout` — a broker that
   * hung after the attack phase — and nothing was checked.
   */
  readonly finish: (timeout: Duration.Duration) => Effect.Effect<boolean, never, Scope.Scope>
  /** Messages exchanged so far (sends, asks, replies, mail). */
  readonly exchanges: () => number
}

interface SentRecord {
  readonly id: string
  readonly from: string
  readonly to: string
  readonly kind: "send" | "ask" | "reply" | "mail"
  /** The sender's counter: a receiver sees each sender's numbers rise. */
  readonly n: number
  /** The text it was sent with: it must arrive with the same. */
  readonly text: string
  acked: boolean
  /** The broker told the sender it dropped the message from its mailbox. */
  expired: boolean
}

/** What the healthy sessions share: every healthy message, what happened to it, who is live. */
interface Shared {
  readonly sent: Map<string, SentRecord>
  /** Messages whose receiver wrote a receipt. */
  readonly receipted: Set<string>
  /** Messages whose sender asked to cancel them (the control may arrive before the answer). */
  readonly cancelling: Set<string>
  /** Messages whose sender's cancel was accepted. */
  readonly cancelled: Set<string>
  /** Asks whose reply the broker refused. */
  readonly refusedReplies: Set<string>
  readonly live: Set<string>
  readonly openAsks: Set<string>
  readonly recent: Array<string>
  readonly queued: Set<string>
  /** The one healthy session asking right now: A and B never ask each other at once (E_MUTUAL_ASK is right then). */
  asking: string | undefined
  stopping: boolean
  exchanges: number
}

/** One healthy session: its connection and what it waits for and has seen. */
interface Healthy {
  readonly letter: "a" | "b" | "c"
  readonly id: string
  readonly name: string
  readonly paged: boolean
  conn: RawConnection | undefined
  /** It has sent `unregister`: what it reads now, it no longer receipts (the broker would drop the receipt). */
  leaving: boolean
  counter: number
  requests: number
  registered: Deferred.Deferred<true> | undefined
  readonly answers: Map<string, Deferred.Deferred<Ack>>
  readonly cancels: Map<string, Deferred.Deferred<boolean>>
  /** Asks waiting for their reply: the reply, or "refused" when the broker refused the reply to them. */
  readonly replies: Map<string, Deferred.Deferred<FrameOf<"message"> | "refused">>
  readonly pings: Map<string, Deferred.Deferred<true>>
  readonly lists: Map<string, Deferred.Deferred<FrameOf<"sessions">>>
  /** The highest counter received from each healthy sender. */
  readonly lastN: Map<string, number>
  readonly received: Set<string>
  /** Messages attackers sent this session, as `from\0id`. */
  readonly attackerMail: Set<string>
  readonly receipts: Set<string>
  readonly controls: Set<string>
  readonly toAnswer: Queue.Queue<FrameOf<"message">>
}

/** Where the healthy sessions connect, under which ids, and where they report. */
export interface HealthyOptions {
  readonly socketPath: string
  readonly scopeId: string
  /** Prefix of session ids and message ids, unique per campaign. */
  readonly prefix: string
  readonly prng: Prng
  readonly findings: Findings
  readonly tally: Tally
}

const now = Effect.clockWith((clock) => clock.currentTimeMillis)

/** Makes the healthy side of a campaign (nothing connects before `start`). */
export const makeHealthyTraffic = (options: HealthyOptions): Effect.Effect<HealthyTraffic> =>
  Effect.gen(function*() {
    const { findings, prefix, prng, scopeId, socketPath, tally } = options
    const shared: Shared = {
      sent: new Map(),
      receipted: new Set(),
      cancelling: new Set(),
      cancelled: new Set(),
      refusedReplies: new Set(),
      live: new Set(),
      openAsks: new Set(),
      recent: [],
      queued: new Set(),
      asking: undefined,
      stopping: false,
      exchanges: 0
    }
    const make = (letter: "a" | "b" | "c", paged: boolean) =>
      Effect.map(Queue.unbounded<FrameOf<"message">>(), (toAnswer): Healthy => ({
        letter,
        id: `${prefix}-${letter}`,
        name: `healthy-${letter}`,
        paged,
        conn: undefined,
        leaving: false,
        counter: 0,
        requests: 0,
        registered: undefined,
        answers: new Map(),
        cancels: new Map(),
        replies: new Map(),
        pings: new Map(),
        lists: new Map(),
        lastN: new Map(),
        received: new Set(),
        attackerMail: new Set(),
        receipts: new Set(),
        controls: new Set(),
        toAnswer
      }))
    const a = yield* make("a", false)
    const b = yield* make("b", true)
    const c = yield* make("c", false)
    const all = [a, b, c]
    const byId = new Map(all.map((h) => [h.id, h]))

    const remember = (id: string) => {
      shared.recent.push(id)
      if (shared.recent.length > 32) shared.recent.shift()
    }

    // -----------------------------------------------------------------------
    // Reading: every frame is measured, strictly decoded and checked.
    // -----------------------------------------------------------------------

    const onFrame = (me: Healthy) => (metered: MeteredFrame): void => {
      tally.frameWritten(metered.bytes, `healthy ${me.name}`)
      if (
        !findings.check(metered.bytes <= MAX_FRAME_BYTES, "frame-too-large", () =>
          `${metered.bytes}-byte frame to healthy ${me.name}`) || metered.text === undefined
      ) return
      const frame = decodeBrokerFrameText(metered.text)
      if (isFrameDecodeError(frame)) {
        findings.add("strict-decode", `${me.name}: ${frame.message} in ${metered.text.slice(0, 200)}`)
        return
      }
      handle(me, frame)
    }

    const forged = (me: Healthy, what: string) => findings.add("forged-frame", `${me.name} got ${what}`)

    const handle = (me: Healthy, frame: BrokerFrame): void => {
      switch (frame.type) {
        case "registered":
          if (me.registered !== undefined) Deferred.doneUnsafe(me.registered, Effect.succeed(true))
          return
        case "health_ok":
          return settle(me.pings, frame.requestId, true, () => forged(me, `a health_ok it did not ask for`))
        case "sessions":
          return settle(me.lists, frame.requestId, frame, () => forged(me, `a sessions answer it did not ask for`))
        case "delivered":
        case "delivery_failed": {
          const bare = frame.type === "delivered" ? frame.delivery === undefined : frame.code === undefined
          if (bare) {
            return settle(me.cancels, frame.messageId, frame.type === "delivered", () =>
              forged(me, `a cancel answer for ${frame.messageId.slice(0, 60)}, which it did not cancel`))
          }
          return settle(me.answers, frame.messageId, frame, () =>
            forged(me, `an answer for ${frame.messageId.slice(0, 60)}, which it has no send pending for`))
        }
        case "message":
          return onMessage(me, frame)
        case "message_receipt": {
          const id = frame.receipt.messageId
          const record = shared.sent.get(id)
          if (frame.receipt.status === "expired" && record !== undefined && record.from === me.id) {
            record.expired = true
            findings.add("mail-evicted", `${me.name}'s ${id} to ${record.to}: ${frame.receipt.detail ?? "expired"}`)
            return
          }
          if (
            record === undefined || record.from !== me.id || frame.from.id !== record.to || !shared.receipted.has(id)
          ) {
            return forged(me, `a ${frame.receipt.status} receipt for ${id.slice(0, 60)} from ${frame.from.id.slice(0, 60)}`)
          }
          me.receipts.add(id)
          return
        }
        case "message_control": {
          const id = frame.control.messageId
          const from = frame.from.id
          const record = shared.sent.get(id)
          const fromHealthy = byId.has(from)
          const legit = fromHealthy
            ? record !== undefined && record.from === from && record.to === me.id && shared.cancelling.has(id)
            : me.attackerMail.has(`${from}\u0000${id}`)
          if (!legit) return forged(me, `a ${frame.control.action} control for ${id.slice(0, 60)} from ${from.slice(0, 60)}`)
          if (fromHealthy) me.controls.add(id)
          return
        }
        case "error":
          findings.add("healthy-refused", `${me.name} got an error frame: ${frame.error}`)
          return
        case "session_joined":
        case "session_left":
        case "presence_update":
          return
      }
    }

    const onMessage = (me: Healthy, frame: FrameOf<"message">): void => {
      const from = frame.from.id
      const message = frame.message
      if (!byId.has(from)) {
        if (message.replyTo !== undefined && me.replies.has(message.replyTo)) {
          forged(me, `a reply to its ask ${message.replyTo} from ${from.slice(0, 60)}, which it did not ask`)
        }
        if (me.attackerMail.size < 100_000) me.attackerMail.add(`${from}\u0000${message.id}`)
        return
      }
      const record = shared.sent.get(message.id)
      if (record === undefined || record.from !== from || record.to !== me.id) {
        return forged(me, `message ${message.id.slice(0, 60)} from ${from}, which that session did not send it`)
      }
      if (me.received.has(message.id)) {
        findings.add("healthy-duplicate", `${me.name} got ${message.id} twice`)
        return
      }
      me.received.add(message.id)
      findings.check(message.content.text === record.text, "healthy-altered", () =>
        `${me.name} got ${message.id} with a ${message.content.text.length}-character text, not the ${record.text.length} characters sent: ${
          JSON.stringify(message.content.text.slice(0, 60))
        }`)
      const last = me.lastN.get(from) ?? 0
      findings.check(record.n > last, "healthy-reorder", () => `${me.name} got ${message.id} after number ${last} from ${from}`)
      me.lastN.set(from, Math.max(last, record.n))
      shared.queued.delete(message.id)
      // Every healthy message is receipted at once (while registered); its sender must get the receipt.
      if (!me.leaving) {
        shared.receipted.add(message.id)
        me.conn?.writeNow([JSON.stringify({
          type: "message_receipt",
          receipt: { messageId: message.id, status: "receiver_received", timestamp: 1 }
        })])
      }
      if (message.replyTo !== undefined) {
        const waiting = me.replies.get(message.replyTo)
        if (waiting !== undefined) Deferred.doneUnsafe(waiting, Effect.succeed(frame))
      }
      if (message.expectsReply === true) Queue.offerUnsafe(me.toAnswer, frame)
    }

    const settle = <A>(pending: Map<string, Deferred.Deferred<A>>, key: string, value: A, otherwise: () => void) => {
      const waiting = pending.get(key)
      if (waiting === undefined) return otherwise()
      pending.delete(key)
      Deferred.doneUnsafe(waiting, Effect.succeed(value))
    }

    /**
     * Waits for `deferred` while `me`'s connection is open (a closed one is
     * its own finding, "healthy-disconnected", and answers nothing more):
     * Some(answer), or None once the connection has closed.
     */
    const whileOpen = <A>(me: Healthy, deferred: Deferred.Deferred<A>): Effect.Effect<Option.Option<A>> => {
      const conn = me.conn
      const wait = Deferred.await(deferred).pipe(Effect.map(Option.some))
      return conn === undefined ? wait : Effect.raceFirst(wait, Effect.as(conn.closed, Option.none<A>()))
    }

    /**
     * Waits for `deferred` while `me`'s connection is open; after ANSWER_TIMEOUT
     * reports the broker stalled. Undefined when it gives up or the connection
     * closed — so no answer may itself be undefined.
     */
    const awaitAnswer = <A>(me: Healthy, deferred: Deferred.Deferred<A>, what: string) =>
      whileOpen(me, deferred).pipe(
        Effect.timeoutOption(ANSWER_TIMEOUT),
        Effect.map((answer) => {
          if (answer._tag === "Some") return Option.getOrUndefined(answer.value)
          findings.add("healthy-stalled", `${me.name}: no ${what} within ${Duration.format(ANSWER_TIMEOUT)}`)
          return undefined
        })
      )

    // -----------------------------------------------------------------------
    // Writing: each frame is numbered and written in one synchronous step.
    // -----------------------------------------------------------------------

    const connect = (me: Healthy) =>
      Effect.gen(function*() {
        const opened = yield* Effect.result(openRaw(socketPath, `healthy ${me.name}`, onFrame(me)))
        if (opened._tag === "Failure") {
          findings.add("healthy-disconnected", `${me.name}: ${opened.failure.message}`)
          return
        }
        const conn = opened.success
        me.conn = conn
        me.leaving = false
        const registered = yield* Deferred.make<true>()
        me.registered = registered
        const at = yield* now
        conn.writeNow([JSON.stringify({
          type: "register",
          sessionId: me.id,
          scopeId,
          session: { cwd: "/tmp/fuzz-healthy", model: "fuzz-model", pid: 1, startedAt: at, lastActivity: at, name: me.name },
          ...(me.paged ? { features: [LIST_PAGE_V1] } : {})
        })])
        const ok = yield* awaitAnswer(me, registered, "registered")
        if (ok === undefined) return
        shared.live.add(me.id)
        // A healthy connection must stay open for as long as its session runs.
        yield* Effect.forkScoped(Effect.andThen(conn.closed, Effect.sync(() => {
          if (me.conn !== conn || !shared.live.has(me.id)) return
          if (!shared.stopping) findings.add("healthy-disconnected", `${me.name}'s connection was closed by the broker`)
          shared.live.delete(me.id)
        })))
      })

    /**
     * Sends one message now; its record and its answer's waiter exist before
     * the frame is written, and `numbered` sees its id in the same step.
     */
    const sendNow = (
      me: Healthy,
      to: Healthy,
      kind: SentRecord["kind"],
      extra: Record<string, unknown>,
      numbered: (id: string) => void = () => {}
    ) =>
      Effect.gen(function*() {
        const conn = me.conn
        if (conn === undefined) return undefined
        const answer = yield* Deferred.make<Ack>()
        const at = yield* now
        const n = ++me.counter
        const id = `${prefix}-${me.letter}-${n}`
        const text = prng.chance(0.05) ? `${kind} ${id} ${"·".repeat(prng.int(500, 4000))}` : `${kind} ${id}`
        shared.sent.set(id, { id, from: me.id, to: to.id, kind, n, text, acked: false, expired: false })
        me.answers.set(id, answer)
        numbered(id)
        remember(id)
        shared.exchanges++
        conn.writeNow([JSON.stringify({ type: "send", to: to.id, message: { id, timestamp: at, content: { text }, ...extra } })])
        const ack = yield* awaitAnswer(me, answer, `answer to ${kind} ${id}`)
        if (ack === undefined) return undefined
        if (ack.type === "delivered") {
          const record = shared.sent.get(id)
          if (record !== undefined) record.acked = true
        }
        return { id, ack }
      })

    const expectDelivered = (me: Healthy, result: { readonly id: string; readonly ack: Ack } | undefined) => {
      if (result === undefined || result.ack.type === "delivered") return result !== undefined
      findings.add("healthy-refused", `${me.name}'s ${result.id} was refused: ${result.ack.code ?? ""} ${result.ack.reason}`)
      return false
    }

    const ask = (me: Healthy, peer: Healthy) =>
      Effect.gen(function*() {
        const reply = yield* Deferred.make<FrameOf<"message"> | "refused">()
        let asked: string | undefined
        const sent = yield* sendNow(me, peer, "ask", { expectsReply: true }, (id) => {
          asked = id
          me.replies.set(id, reply)
          shared.openAsks.add(id)
        })
        if (sent !== undefined && expectDelivered(me, sent)) {
          // No reply because the asker's connection closed is that closing's finding, not a hijack.
          const got = yield* whileOpen(me, reply).pipe(Effect.timeoutOption(ANSWER_TIMEOUT))
          if (got._tag === "None" && !shared.refusedReplies.has(sent.id)) {
            findings.add("ask-hijacked", `${me.name}'s ask ${sent.id} to ${peer.name} was never answered`)
          }
        }
        if (asked !== undefined) {
          me.replies.delete(asked)
          shared.openAsks.delete(asked)
        }
      })

    /** Answers the asks a session was sent, in order, each after a short think (widening the window). */
    const answerAsks = (me: Healthy) =>
      Effect.forever(
        Effect.gen(function*() {
          const question = yield* Queue.take(me.toAnswer)
          const asker = byId.get(question.from.id)
          if (asker === undefined) return
          yield* Effect.sleep(Duration.millis(prng.int(0, 30)))
          const sent = yield* sendNow(me, asker, "reply", { replyTo: question.message.id })
          if (sent === undefined || sent.ack.type === "delivered") return
          if (sent.ack.code === DeliveryCode.ReplyTarget) {
            shared.refusedReplies.add(question.message.id)
            const waiting = asker.replies.get(question.message.id)
            if (waiting !== undefined) Deferred.doneUnsafe(waiting, Effect.succeed("refused"))
            findings.add("ask-hijacked", `${me.name}'s reply to ${question.message.id} was refused: ${sent.ack.reason}`)
          } else {
            findings.add("healthy-refused", `${me.name}'s reply ${sent.id} was refused: ${sent.ack.code ?? ""} ${sent.ack.reason}`)
          }
        }),
        { disableYield: true }
      )

    const cancelOne = (me: Healthy, peer: Healthy) =>
      Effect.gen(function*() {
        const conn = me.conn
        const target = [...shared.sent.values()].reverse().find((record) =>
          record.from === me.id && record.to === peer.id && record.kind === "send" && record.acked &&
          !shared.cancelling.has(record.id)
        )
        if (conn === undefined || target === undefined) return
        const answer = yield* Deferred.make<boolean>()
        me.cancels.set(target.id, answer)
        shared.cancelling.add(target.id)
        conn.writeNow([JSON.stringify({ type: "cancel_message", messageId: target.id })])
        const ok = yield* awaitAnswer(me, answer, `answer to cancel ${target.id}`)
        if (ok === true) shared.cancelled.add(target.id)
        else if (ok === false) findings.add("healthy-refused", `${me.name}'s cancel of its own ${target.id} was refused`)
      })

    /** A round trip: once answered, everything the broker queued for `me` before it has been read. */
    const roundTrip = (me: Healthy) =>
      Effect.gen(function*() {
        const conn = me.conn
        if (conn === undefined || conn.isClosed()) return
        const pong = yield* Deferred.make<true>()
        const requestId = `${me.id}-ping-${++me.requests}`
        me.pings.set(requestId, pong)
        conn.writeNow([JSON.stringify({ type: "health", requestId })])
        yield* awaitAnswer(me, pong, "round trip")
      })

    const listPage = (me: Healthy, cursor: string | undefined) =>
      Effect.gen(function*() {
        const conn = me.conn
        if (conn === undefined) return undefined
        const answer = yield* Deferred.make<FrameOf<"sessions">>()
        const requestId = `${me.id}-list-${++me.requests}`
        me.lists.set(requestId, answer)
        conn.writeNow([JSON.stringify({ type: "list", requestId, ...(cursor === undefined ? {} : { cursor }) })])
        return yield* awaitAnswer(me, answer, "sessions")
      })

    /** Lists (all pages, for B) and checks that every healthy session live when it asked is there. */
    const listAndCheck = (me: Healthy) =>
      Effect.gen(function*() {
        const expected = [...shared.live]
        const seen = new Set<string>()
        let cursor: string | undefined
        for (let page = 0; page < 1000; page++) {
          const frame = yield* listPage(me, cursor)
          if (frame === undefined) return
          for (const session of frame.sessions) seen.add(session.id)
          cursor = me.paged ? frame.nextCursor : undefined
          if (cursor === undefined) break
        }
        for (const id of expected) {
          findings.check(seen.has(id) || !shared.live.has(id), "list-hides-session", () =>
            `${me.name}'s ${me.paged ? "paged " : ""}list left out ${id} (${seen.size} listed)`)
        }
      })

    /** One step of a session's traffic toward its peer (and C). */
    const step = (me: Healthy, peer: Healthy) =>
      Effect.gen(function*() {
        const roll = prng.int(1, 100)
        if (roll <= 50) {
          expectDelivered(me, yield* sendNow(me, peer, "send", {}))
        } else if (roll <= 65 && shared.asking === undefined) {
          shared.asking = me.id
          yield* ask(me, peer).pipe(Effect.ensuring(Effect.sync(() => {
            shared.asking = undefined
          })))
        } else if (roll <= 78) {
          const away = !shared.live.has(c.id)
          const sent = yield* sendNow(me, c, "mail", {})
          if (expectDelivered(me, sent) && away && sent !== undefined && sent.ack.type === "delivered" && sent.ack.delivery === "queued") {
            shared.queued.add(sent.id)
          }
        } else if (roll <= 88) {
          yield* cancelOne(me, peer)
        } else if (roll <= 96) {
          yield* listAndCheck(me)
        } else {
          me.conn?.writeNow([JSON.stringify({ type: "presence", status: `busy ${prng.int(1, 9)}` })])
        }
      })

    const traffic = (me: Healthy, peer: Healthy) =>
      Effect.gen(function*() {
        while (!shared.stopping && me.conn !== undefined && !me.conn.isClosed()) {
          yield* step(me, peer)
          yield* Effect.sleep(Duration.millis(prng.int(2, 12)))
        }
      })

    const leave = (me: Healthy) =>
      Effect.gen(function*() {
        shared.live.delete(me.id)
        me.leaving = true
        me.conn?.writeNow([JSON.stringify({ type: "unregister" })])
        yield* roundTrip(me)
        yield* me.conn?.destroy ?? Effect.void
        me.conn = undefined
      })

    /** C is away, then back (a new registration), then away again, … until the traffic stops. */
    const comeAndGo = Effect.gen(function*() {
      while (!shared.stopping) {
        yield* Effect.sleep(Duration.millis(prng.int(150, 900)))
        if (shared.stopping) return
        yield* connect(c)
        yield* Effect.sleep(Duration.millis(prng.int(150, 900)))
        if (shared.stopping) return
        yield* leave(c)
      }
    })

    let workers: ReadonlyArray<Fiber.Fiber<void>> = []

    /** The traffic stopped, and three rounds of round trips: then everything it caused has been read. */
    const settleAll = Effect.gen(function*() {
      yield* Fiber.joinAll(workers)
      // Nothing is asked any more; replies still being written finish (their acks arrive).
      yield* Effect.sync(() => all.every((h) => h.conn === undefined || h.conn.isClosed() || (h.answers.size === 0 && h.cancels.size === 0))).pipe(
        Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (done) => done }),
        Effect.timeoutOption(ANSWER_TIMEOUT)
      )
      if (c.conn === undefined) yield* connect(c)
      for (let round = 0; round < 3; round++) {
        for (const me of all) yield* roundTrip(me)
      }
    })

    /** Nothing acknowledged may be missing once everything has been read. */
    const checkLosses = Effect.sync(() => {
      for (const record of shared.sent.values()) {
        if (!record.acked || record.expired) continue
        const receiver = byId.get(record.to)
        if (receiver === undefined) continue
        if (!receiver.received.has(record.id)) {
          findings.add(
            record.kind === "mail" ? "mail-lost" : "healthy-loss",
            `${record.kind} ${record.id} to ${receiver.name} was acknowledged and never arrived`
          )
          continue
        }
        const sender = byId.get(record.from)
        if (sender !== undefined && shared.receipted.has(record.id)) {
          findings.check(sender.receipts.has(record.id), "receipt-lost", () =>
            `${receiver.name}'s receipt for ${record.id} never reached ${sender.name}`)
        }
        if (shared.cancelled.has(record.id)) {
          findings.check(receiver.controls.has(record.id), "healthy-loss", () =>
            `the cancel control for ${record.id} never reached ${receiver.name}`)
        }
      }
    })

    const finish = (timeout: Duration.Duration) =>
      Effect.gen(function*() {
        shared.stopping = true
        // One bound for all of it: each wait's own ANSWER_TIMEOUT, nine round trips and more in a row, would
        // keep a hung broker unnoticed for minutes. The traffic still waiting ends with the campaign's Scope.
        if (Option.isNone(yield* Effect.timeoutOption(settleAll, timeout))) return false
        yield* checkLosses
        return true
      })

    return {
      view: {
        scopeId,
        sessionIds: all.map((h) => h.id),
        names: all.map((h) => h.name),
        recentIds: () => shared.recent,
        openAsks: () => [...shared.openAsks],
        queuedIds: () => [...shared.queued]
      },
      start: Effect.gen(function*() {
        for (const me of all) yield* connect(me)
        yield* leave(c)
      }),
      run: Effect.gen(function*() {
        workers = [
          yield* Effect.forkScoped(traffic(a, b)),
          yield* Effect.forkScoped(traffic(b, a)),
          yield* Effect.forkScoped(comeAndGo)
        ]
        for (const me of all) yield* Effect.forkScoped(answerAsks(me))
      }),
      finish,
      exchanges: () => shared.exchanges
    } satisfies HealthyTraffic
  })
