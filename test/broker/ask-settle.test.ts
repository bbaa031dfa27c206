/**
 * `ask-expiry-v1` on a Router driven by hand (no expiry fiber runs, the
 * clock is the test's): a `list` from an asker granted the extension closes
 * the edges past their deadline before it is answered, so the asker's round
 * trip at its own deadline reads the broker's verdict first (Discovery.ts,
 * Ask.ts); and an `ask_expired` goes only to a live connection granted the
 * extension — not to a base client that took its asker's id over, nor owed
 * to an asker that is away (MailDelivery.tellLive, `takeBack`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_EXPIRY_V1, ASK_TIMEOUT_V1, LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { typedSessions, written } from "../support/frameTypes.ts"
import { handRouter } from "../support/handRouter.ts"

const EXPIRY = [ASK_TIMEOUT_V1, ASK_EXPIRY_V1, LIST_PAGE_V1]
const TIMEOUT_MS = 1_000

const setUp = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const { attach, batch, router, close } = yield* handRouter({}, () => clock.now)
  const session = typedSessions({ attach, batch })
  const asker = session("asker", EXPIRY)
  session("answerer", [])
  written(router, asker)
  const question = message("well?", { expectsReply: true })
  batch(asker.peer, [{ type: "send", to: "answerer", message: question, askTimeoutMs: TIMEOUT_MS }])
  return { clock, batch, router, close, session, asker, question }
})

describe("ask-expiry-v1: the asker's round trip and who may be written ask_expired", () => {
  it.effect("a list from an asker granted ask-expiry-v1, past its ask's deadline, is answered behind the ask_expired", () =>
    Effect.gen(function*() {
      const { asker, batch, clock, router } = yield* setUp
      assert.deepStrictEqual(written(router, asker), ["delivered"])
      // The deadline passed; the broker's expiry fiber has not run (none runs here).
      clock.now += TIMEOUT_MS
      batch(asker.peer, [{ type: "list", requestId: "r-1", limit: 1 }])
      assert.deepStrictEqual(written(router, asker), ["ask_expired", "sessions"])
    }))

  it.effect("a list before the deadline closes nothing", () =>
    Effect.gen(function*() {
      const { asker, batch, clock, router } = yield* setUp
      written(router, asker)
      clock.now += TIMEOUT_MS - 1
      batch(asker.peer, [{ type: "list", requestId: "r-1", limit: 1 }])
      assert.deepStrictEqual(written(router, asker), ["sessions"])
    }))

  it.effect("an ask_expired left unwritten goes to a client that took the asker's id over with the extension, not to a base one", () =>
    Effect.gen(function*() {
      const { clock, router, session } = yield* setUp
      clock.now += TIMEOUT_MS
      router.prune(clock.now)
      // Still in the asker's outbox, behind the acknowledgement, when another process takes its id.
      const base = session("asker", [])
      assert.notInclude(written(router, base), "ask_expired")
      // The same with a client granted the extension: it is handed on.
      const second = yield* setUp
      second.clock.now += TIMEOUT_MS
      second.router.prune(second.clock.now)
      const granted = second.session("asker", EXPIRY)
      assert.include(written(second.router, granted), "ask_expired")
    }))

  it.effect("an asker away at its ask's deadline is not owed the ask_expired", () =>
    Effect.gen(function*() {
      const { asker, clock, close, router, session } = yield* setUp
      written(router, asker)
      close(asker.peer)
      clock.now += TIMEOUT_MS
      router.prune(clock.now)
      const back = session("asker", EXPIRY)
      assert.notInclude(written(router, back), "ask_expired")
    }))
})
