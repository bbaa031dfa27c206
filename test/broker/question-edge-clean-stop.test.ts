/**
 * A durable question's edge over a CLEAN broker stop (review rvw72 probe 1; C-DQ-6: a disconnected broker does not
 * end a durable wait). Real brokers (`runBroker`, its default durability: file-backed SQLite `intercom.db`) on a Unix
 * socket, one after the other on one directory: the child asks q-clean, the `questions-v1` supervisor is notified and
 * leaves; the broker is stopped cleanly (its Scope closed) while the child still waits. The stop closes the child's
 * connection; before the fix `Questions.drop` closed the waiter's edge as for a child that left, and the store's
 * last commit deleted its `ask_edges` row — which a crash never commits (test/broker/question-reply-queued-saved.test.ts
 * restores it) — so on the next broker a base supervisor's reply along it was refused (`E_REPLY_TARGET`).
 *
 * The second case holds what a child that really leaves while the broker runs still does: its edge closes and the
 * stop's commit deletes the row (its `unregister`, with a round trip in the same write, is handled before the stop).
 * No sleeps: round trips only; the rows are read from the database file once the broker's Scope is closed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { DatabaseSync } from "node:sqlite"
import { join } from "node:path"
import { DATABASE_FILE } from "../../src/broker/runBroker.ts"
import { GROUPS_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { writeThenRoundTrip } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { FEATURES, request, socketQuestionWorld } from "../support/socketQuestions.ts"
import type { WireClient } from "../support/wire.ts"

/** A base supervisor's features: groups and the supervisor channel, no `questions-v1` (so it is not refused `unnotified`). */
const BASE = [GROUPS_V1, SUPERVISOR_V1]
const QUESTION = { type: "question_ask", questionId: "q-clean", reason: "need_decision", text: "Left or right?" }

/** The rows of `ask_edges` in a stopped broker's database. */
const edgeRows = (intercomDir: string): number => {
  const db = new DatabaseSync(join(intercomDir, DATABASE_FILE))
  try {
    const row = db.prepare("SELECT count(*) AS n FROM ask_edges").get()
    return typeof row?.n === "number" ? row.n : -1
  } finally {
    db.close()
  }
}

/**
 * A first broker on which the child asks q-clean and its `questions-v1` supervisor, notified, leaves; `beforeStop`
 * runs with the child's connection, then the broker is stopped cleanly. Then a second broker, a base supervisor and
 * the child back (not asking again): the ask_edges rows the stop left, and the answer to the supervisor's reply along
 * q-clean's edge (its delivery, or its refusal's code).
 */
const stopWhileAsked = <E>(beforeStop: (child: WireClient) => Effect.Effect<void, E>) =>
  Effect.gen(function*() {
    const { child, intercomDir, start, supervisor } = yield* socketQuestionWorld
    const first = yield* start
    const sup1 = yield* supervisor("sup-1", FEATURES)
    yield* sup1.send({ type: "authorize_supervisor", requestId: "a", childName: "worker" })
    const { capability } = yield* sup1.next("supervisor_authorized")
    const child1 = yield* child("child-1", capability)
    const asked = yield* request(child1, "ask-1", QUESTION)
    assert.strictEqual(asked.type === "question_result" ? asked.durable : asked, true, "setup: not saved durably")
    yield* messageFor(sup1, "q-clean")
    yield* sup1.destroy
    yield* beforeStop(child1)
    yield* Scope.close(first, Exit.void)
    yield* child1.waitClosed()
    const rows = edgeRows(intercomDir)

    const second = yield* start
    const base = yield* supervisor("sup-base", BASE)
    yield* base.send({ type: "authorize_supervisor", requestId: "b", childName: "worker", capability })
    yield* base.next("supervisor_authorized")
    // The child back, before it asks again (no waiter): the restored edge is the only one a reply can close.
    const back = yield* child("child-2", capability)
    yield* back.roundTrip
    const ack = yield* send(base, "child-worker", message("go left", { replyTo: "q-clean" }))
    const reply = ack.type === "delivered" ? `${ack.delivery}` : `${ack.type} ${ack.code}`
    yield* Scope.close(second, Exit.void)
    return { rows, reply }
  })

describe("a durable question's edge over a clean broker stop (C-DQ-6, review rvw72 probe 1)", () => {
  it.live("the stop keeps the stored edge, and a base supervisor's reply along it reaches the child back", () =>
    Effect.gen(function*() {
      const { rows, reply } = yield* stopWhileAsked(() => Effect.void)
      assert.strictEqual(rows, 1, "the question's ask_edges row was deleted by the clean stop")
      assert.strictEqual(reply, "socket_delivered")
    }))

  it.live("a child that unregisters while the broker runs still closes its edge: the row is gone and the reply refused", () =>
    Effect.gen(function*() {
      const { rows, reply } = yield* stopWhileAsked((child) => writeThenRoundTrip(child, [{ type: "unregister" }]))
      assert.strictEqual(rows, 0, "the edge of a child that left was kept")
      // No edge: the reply from another group is refused as any cross-group send (or as one with no pending ask).
      assert.match(reply, /^delivery_failed E_(CROSS_GROUP|REPLY_TARGET)$/)
    }))
})
